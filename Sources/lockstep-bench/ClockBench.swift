import ArgumentParser
import Foundation
import LockstepCore
import LockstepLab
import LockstepPlayerProtocol

/// Clock estimation against the known truth, and chrony on the same link.
///
/// Every lab host runs `lockstepd` with a simulated device clock (`--sim-clock-offset`,
/// `--sim-clock-skew`) on one shared kernel clock, so the true offset from host A to host B is
/// `deviceB(h) − deviceA(h)`. Each host's own `clock` reading gives its device time at a host
/// time; with its configured skew that extrapolates exactly, so no assumption about the agent's
/// clock epoch is needed.
struct ClockBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clock",
        abstract: "Offset error, bound coverage and time to usable per scenario; chrony on the same clean link.")

    @OptionGroup var options: BenchOptions

    @Option(help: "Hosts per scenario.")
    var hosts = 4

    @Option(help: "Seconds of readings per scenario (after the warm-up).")
    var seconds = 20.0

    @Option(help: "Seconds of warm-up before errors are counted.")
    var warmup = 5.0

    @Option(help: "Scenarios, comma-separated: clean, jitter, loss, asym, skew.")
    var scenarios = "clean,jitter,loss,asym,skew"

    @Flag(help: "Skip the chrony comparison.")
    var noChrony = false

    func run() async throws {
        try options.check()
        var report = Report(benchmark: "clock")
        report.parameters = [
            "hosts": String(hosts), "seconds": fmt(seconds, 0), "warmup_s": fmt(warmup, 0), "read_interval_ms": "100",
            "truth": "simulated device clocks on one kernel clock: true offset = deviceB(h) - deviceA(h)",
            "usable": "first reading with bound < 1 ms and |error| < 1 ms, from the peer's first appearance in `clock`",
            "converged": "from then on |error| < 100 us in every reading",
        ]
        var rows: [[String: String]] = []
        let order = "scenario,readings,p50 us,p95 us,p99 us,max us,coverage %,bound p50 us,bound/p50 err,bound/p99 err,closure p50 us,usable p50 s,usable max s,converged max s"
        for name in scenarios.split(separator: ",").map(String.init) {
            guard let scenario = Scenario.named(name, hosts: hosts) else { throw ValidationError("unknown scenario \(name)") }
            options.progress("scenario \(name): \(scenario.description)")
            let result = try await measure(scenario, chrony: name == "clean" && !noChrony, restart: name == "clean")
            var row = result.lockstep.row(name)
            row["_order"] = order
            rows.append(row)
            result.lockstep.figures(into: &report.figures, prefix: name)
            for (who, summary) in [("Lockstep", result.lockstep), ("chrony", result.chrony)] {
                guard let summary, !summary.byPair.isEmpty else { continue }
                report.tables["\(name): \(who)'s error by directed pair (signed: estimate - truth; chrony's pairs by address)"] = summary.byPair.keys.sorted().map { pair in
                    let signed = summary.byPair[pair]!, magnitude = Stats(signed.map(\.magnitude))
                    let mean = signed.reduce(0, +) / Double(signed.count)
                    let sd = (signed.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(signed.count)).squareRoot()
                    return ["_order": "pair,readings,mean us,sd us,p50 us,p99 us,max us", "pair": pair, "readings": String(signed.count),
                            "mean us": fmt(mean / 1000, 2), "sd us": fmt(sd / 1000, 2),
                            "p50 us": fmt(magnitude.median / 1000, 1), "p99 us": fmt(magnitude.percentile(99) / 1000, 1), "max us": fmt(magnitude.max / 1000, 1)]
                }
            }
            if let c = result.chrony {
                var r = c.row("chrony (\(name))")
                r["_order"] = order
                rows.append(r)
                if let raw = result.chronyRaw {
                    var rr = raw.row("chrony-raw (\(name))")
                    rr["_order"] = order
                    rows.append(rr)
                    raw.figures(into: &report.figures, prefix: "chrony_raw_\(name)")
                }
                c.figures(into: &report.figures, prefix: "chrony_\(name)")
                // Like for like: the same pairs, the same links, the same seconds.
                let ratio = result.lockstep.errors.percentile(99) / c.errors.percentile(99)
                report.figures["clean_p99_ratio_lockstep_over_chrony"] = ratio
                report.goal("clean link: no worse than chrony (p99)", target: "ratio <= 1", measured: fmt(ratio, 2), met: ratio <= 1)
                let median = result.lockstep.errors.median / c.errors.median
                report.figures["clean_p50_ratio_lockstep_over_chrony"] = median
                report.goal("clean link: no worse than chrony (p50)", target: "ratio <= 1", measured: fmt(median, 2), met: median <= 1)
                report.notes.append(result.chronyConfiguration)
            }
            if let restart = result.restart {
                report.figures["restart_usable_max_s"] = restart
                report.goal("restarted peer (new epoch) usable again", target: "< 1 s from its first appearance", measured: "\(fmt(restart, 2)) s", met: restart < 1)
            }
            let s = result.lockstep
            switch name {
            case "clean":
                report.goal("clean link p99", target: "<= 20 us", measured: "\(fmt(s.errors.percentile(99) / 1000, 1)) us", met: s.errors.percentile(99) <= 20_000)
                report.goal("usable within 0.5 s", target: "<= 0.5 s", measured: "\(fmt(s.usable.max, 2)) s", met: s.usable.max <= 0.5)
            case "jitter":
                report.goal("5 ms +- 1 ms jitter p99", target: "<= 150 us", measured: "\(fmt(s.errors.percentile(99) / 1000, 1)) us", met: s.errors.percentile(99) <= 150_000)
            case "asym":
                report.notes.append("asym: a two-way exchange cannot see a constant asymmetry; the pairs with h1 are expected to be off by half of it (1.5 ms)")
            default: break
            }
            if name != "asym" {
                report.goal("\(name): bound covers the error", target: ">= 99 %", measured: "\(fmt(s.coverage * 100, 2)) %", met: s.coverage >= 0.99)
            }
        }
        report.tables["clock offset error against the truth (|estimate - truth|; bound = reported error bound)"] = rows
        report.notes.append("figures taken on a shared 2-core machine; reading an agent's `clock` costs a socket round trip, readings are not simultaneous with the peer's (the truth is extrapolated with the configured skew, exact to the ns)")
        report.print(json: options.json)
    }

    // MARK: - Scenarios

    struct Scenario {
        var description: String
        var offsets: [Double]
        var skews: [Double]
        /// Extra lockstepd flags per host (1-based), given the lab's addresses.
        var flags: (Int, [Int: String]) -> [String]

        static func named(_ name: String, hosts n: Int) -> Scenario? {
            // h1 is the reference; the others alternate in sign so pairs see large and small offsets.
            func sign(_ h: Int) -> Double { h % 2 == 0 ? 1 : -1 }
            func offset(_ h: Int) -> Double {
                if h == 1 { return 0 }
                let magnitude: Double = (7.5 * Double(h - 1)).truncatingRemainder(dividingBy: 30)
                return sign(h) * magnitude
            }
            func skew(_ h: Int, cap: Int, base: Int, step: Int) -> Double {
                if h == 1 { return 0 }
                let magnitude: Int = Swift.min(cap, base + step * (h - 2))
                return sign(h) * Double(magnitude)
            }
            let offsets: [Double] = (1...n).map(offset)
            let skews: [Double] = (1...n).map { skew($0, cap: 100, base: 35, step: 35) }
            switch name {
            case "clean":
                return Scenario(description: "veth link, offsets up to 30 s, skews up to 100 ppm", offsets: offsets, skews: skews) { _, _ in [] }
            case "jitter":
                return Scenario(description: "every datagram delayed 5 ms +- 1 ms", offsets: offsets, skews: skews) { _, _ in ["--impair", "delay=5ms,jitter=1ms"] }
            case "loss":
                return Scenario(description: "10 % loss and 1 ms +- 0.5 ms", offsets: offsets, skews: skews) { _, _ in ["--impair", "delay=1ms,jitter=500us,loss=10%"] }
            case "asym":
                // h1 sends everything 5 ms late, the others 2 ms late: the pairs with h1 see a 3 ms
                // asymmetry, the others none. (Not `--impair-to`: peers found by DNS-SD may talk to
                // h1 over IPv6 link-local, which an IPv4 address would not match.)
                return Scenario(description: "h1 sends 5 ms late, the others 2 ms late", offsets: offsets, skews: skews) { h, _ in
                    ["--impair", h == 1 ? "delay=5ms" : "delay=2ms"]
                }
            case "skew":
                let big: [Double] = (1...n).map { skew($0, cap: 500, base: 100, step: 150) }
                return Scenario(description: "skews 100-500 ppm", offsets: offsets, skews: big) { _, _ in [] }
            default:
                return nil
            }
        }
    }

    // MARK: - Measuring

    struct Series {
        var errors: [Double] = []
        var bounds: [Double] = []
        var covered = 0
        var closures: [Double] = []
        var usableTimes: [Double] = []
        var convergedTimes: [Double] = []
        /// Signed errors (estimate − truth) per directed pair ("h1->h2"): where a tail comes
        /// from, one pair's bias or every pair's spread.
        var byPair: [String: [Double]] = [:]

        /// A reading of `pair` off the truth by `signed` (estimate − truth), with its bound.
        mutating func add(signed: Double, bound: Double, closure: Double?, pair: String) {
            let error = signed.magnitude
            byPair[pair, default: []].append(signed)
            errors.append(error)
            bounds.append(bound)
            if error <= bound { covered += 1 }
            if let closure { closures.append(closure) }
        }
    }

    struct Summary {
        var errors: Stats
        var bounds: Stats
        var coverage: Double
        var closures: Stats
        var usable: Stats
        var converged: Stats
        var byPair: [String: [Double]]

        init(_ s: Series) {
            byPair = s.byPair
            errors = Stats(s.errors)
            bounds = Stats(s.bounds)
            coverage = s.errors.isEmpty ? .nan : Double(s.covered) / Double(s.errors.count)
            closures = Stats(s.closures)
            usable = Stats(s.usableTimes)
            converged = Stats(s.convergedTimes)
        }

        func row(_ name: String) -> [String: String] {
            func us(_ v: Double) -> String { fmt(v / 1000, 1) }
            return ["scenario": name, "readings": String(errors.count),
                    "p50 us": us(errors.median), "p95 us": us(errors.percentile(95)), "p99 us": us(errors.percentile(99)), "max us": us(errors.max),
                    "coverage %": fmt(coverage * 100, 2), "bound p50 us": us(bounds.median),
                    "bound/p50 err": fmt(bounds.median / errors.median, 1), "bound/p99 err": fmt(bounds.median / errors.percentile(99), 1),
                    "closure p50 us": closures.count > 0 ? us(closures.median) : "-",
                    "usable p50 s": usable.count > 0 ? fmt(usable.median, 2) : "-", "usable max s": usable.count > 0 ? fmt(usable.max, 2) : "-",
                    "converged max s": converged.count > 0 ? fmt(converged.max, 2) : "-"]
        }

        func figures(into f: inout [String: Double], prefix: String) {
            f["\(prefix)_error_p50_us"] = errors.median / 1000
            f["\(prefix)_error_p95_us"] = errors.percentile(95) / 1000
            f["\(prefix)_error_p99_us"] = errors.percentile(99) / 1000
            f["\(prefix)_error_max_us"] = errors.max / 1000
            f["\(prefix)_coverage"] = coverage
            f["\(prefix)_bound_p50_us"] = bounds.median / 1000
            f["\(prefix)_bound_over_p50_error"] = bounds.median / errors.median
            f["\(prefix)_bound_over_p99_error"] = bounds.median / errors.percentile(99)
            if closures.count > 0 { f["\(prefix)_closure_p50_us"] = closures.median / 1000 }
            if usable.count > 0 { f["\(prefix)_usable_max_s"] = usable.max }
            if converged.count > 0 { f["\(prefix)_converged_max_s"] = converged.max }
        }
    }

    struct Outcome {
        var lockstep: Summary
        var chrony: Summary?
        /// chrony's raw per-exchange offsets (measurements.log), before its regression.
        var chronyRaw: Summary?
        var chronyConfiguration = ""
        var restart: Double?
    }

    func measure(_ scenario: Scenario, chrony: Bool, restart: Bool) async throws -> Outcome {
        let lab = try Lab(hosts: hosts, name: "bclk")
        defer { lab.destroy() }
        var addresses: [Int: String] = [:]
        for h in 1...hosts { addresses[h] = try lab.address(h) }
        var skews: [Int: Double] = [:]
        func startAgent(_ h: Int, offset: Double) throws {
            skews[h] = scenario.skews[h - 1]
            try lab.startAgent(h, flags: ["--test-hooks", "--sim-clock-offset", String(offset), "--sim-clock-skew", String(scenario.skews[h - 1])] + scenario.flags(h, addresses), wait: false)
        }
        var chronyConfig = ""
        if chrony { chronyConfig = try startChrony(lab, addresses: addresses) }
        let start = Date()
        for h in 1...hosts { try startAgent(h, offset: scenario.offsets[h - 1]) }
        for h in 1...hosts { try lab.waitForSocket(h) }

        var series = Series()
        var firstSeen: [String: Date] = [:]
        var usable: [String: Double] = [:]
        var history: [String: [(t: Double, err: Double)]] = [:]
        /// Each host's last `clock` reading: its device time at a host time.
        var fixes: [Int: ClockResult] = [:]

        /// Reads every agent once; returns per pair (observer, peer name) the error and bound.
        func readAll(count: Bool) async {
            var results: [Int: ClockResult] = [:]
            for h in 1...hosts {
                guard let r = try? await lab.request(h, "clock", as: ClockResult.self) else { continue }
                results[h] = r
                fixes[h] = r
            }
            for (h, r) in results {
                for p in r.peers {
                    guard let peer = Int(p.name.dropFirst()), let fix = fixes[peer], p.samples > 0 else { continue }
                    let truth = SimulatedClocks.trueOffset(observer: r, peer: fix, peerSkewPPM: skews[peer] ?? 0)
                    let signed = p.offsetNs - truth
                    let error = signed.magnitude
                    let key = "h\(h)->\(p.name)"
                    let now = Date()
                    if firstSeen[key] == nil { firstSeen[key] = now }
                    let t = now.timeIntervalSince(firstSeen[key]!)
                    if usable[key] == nil, p.errorBoundNs < 1_000_000, error < 1_000_000 { usable[key] = t }
                    history[key, default: []].append((t, error))
                    if count {
                        series.add(signed: signed, bound: p.errorBoundNs, closure: p.closureErrorNs, pair: key)
                    }
                }
            }
        }

        // Warm-up, read fast to time the first estimates.
        while Date().timeIntervalSince(start) < warmup {
            await readAll(count: false)
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        let measureStart = Date()
        while Date().timeIntervalSince(measureStart) < seconds {
            await readAll(count: true)
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        series.usableTimes = Array(usable.values)
        for (_, h) in history {
            // Converged: the first time after which every reading is under 100 µs.
            var last = -1.0
            for (t, e) in h where e >= 100_000 { last = t }
            if let after = h.first(where: { $0.t > last }) { series.convergedTimes.append(after.t) }
        }
        var outcome = Outcome(lockstep: Summary(series))

        if chrony {
            (outcome.chrony, outcome.chronyRaw) = try chronySummary(lab, from: measureStart)
            outcome.chronyConfiguration = chronyConfig
        }

        if restart {
            // A peer restarts with a new clock epoch (another offset): time until everyone has a
            // usable estimate of its new clock.
            let h = hosts
            options.progress("restart of h\(h) with a new clock")
            try lab.kill(h)
            let stale = Set(firstSeen.keys.filter { $0.hasSuffix("->h\(h)") })
            for k in stale { firstSeen[k] = nil; usable[k] = nil }
            try startAgent(h, offset: scenario.offsets[h - 1] - 3.25)
            try lab.waitForSocket(h)
            let restartAt = Date()
            while Date().timeIntervalSince(restartAt) < 6, stale.contains(where: { usable[$0] == nil }) {
                await readAll(count: false)
                try await Task.sleep(nanoseconds: 50_000_000)
            }
            outcome.restart = stale.map { usable[$0] ?? .infinity }.max()
        }
        return outcome
    }

    // MARK: - chrony

    /// chronyd 4.3 in every lab host, each an NTP server (`local stratum 1`) and a client of every
    /// other host, so that chrony measures the same directed pairs as the agents, on the same
    /// links, in the same seconds. All run `-x` (never touch the system clock) with everything
    /// under the lab's host directories. Sources are `noselect`: chronyd measures and regresses
    /// them (sourcestats) but never corrects even its own virtual clock, so its estimates stay
    /// relative to the shared kernel clock, whose true offset is 0.
    func startChrony(_ lab: Lab, addresses: [Int: String]) throws -> String {
        for h in 1...hosts {
            let d = lab.hostDirectory(h) + "/chrony"
            try FileManager.default.createDirectory(atPath: d + "/log", withIntermediateDirectories: true)
            let sources = (1...hosts).filter { $0 != h }.map { "server \(addresses[$0]!) iburst minpoll -4 maxpoll -4 noselect" }
            let conf = """
                # chronyd in lab host h\(h): serves its own clock and measures every other host; never changes the clock (-x)
                local stratum 1
                allow all
                port 123
                \(sources.joined(separator: "\n"))
                cmdport 0
                bindcmdaddress \(d)/chronyd.sock
                pidfile \(d)/chronyd.pid
                driftfile \(d)/drift
                logdir \(d)/log
                log measurements statistics
                """
            try conf.write(toFile: d + "/chrony.conf", atomically: true, encoding: .utf8)
            try lab.spawn(h, "chronyd", ["chronyd", "-d", "-x", "-u", "root", "-f", d + "/chrony.conf"])
        }
        return "chrony: `chronyd -d -x -u root -f CONF` in every host (`local stratum 1`, `allow all`, `port 123`, and `server HOST iburst minpoll -4 maxpoll -4 noselect` for every other host, "
            + "`log measurements statistics`, logdir/pidfile/driftfile/command socket under the lab's host directory): the same directed pairs as the agents; "
            + "error = |Est offset| from statistics.log (chrony's regression estimate after each sample, truth 0); bound = 4.5 x its Offset sd, for comparison only; "
            + "chrony-raw: each exchange's |Offset| from measurements.log, bound = half its peer delay"
    }

    /// chrony's estimates since `from` over every host's sources (its log lines carry UTC wall
    /// time): its regression's `Est offset` (statistics.log), and each exchange's raw `Offset`
    /// (measurements.log).
    func chronySummary(_ lab: Lab, from: Date) throws -> (Summary, Summary) {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        var series = Series()
        var raw = Series()
        for h in 1...hosts {
            let dir = lab.hostDirectory(h) + "/chrony/log"
            let stats = (try? String(contentsOfFile: dir + "/statistics.log", encoding: .utf8)) ?? ""
            let measurements = (try? String(contentsOfFile: dir + "/measurements.log", encoding: .utf8)) ?? ""
            for line in stats.split(separator: "\n") {
                let f = line.split(separator: " ", omittingEmptySubsequences: true)
                guard f.count >= 6, let date = formatter.date(from: "\(f[0]) \(f[1])"), date >= from.addingTimeInterval(-1),
                      let offset = Double(f[4]), let sd = Double(f[5]) else { continue }
                series.add(signed: offset * 1e9, bound: 4.5 * sd * 1e9, closure: nil, pair: "h\(h)->\(f[2])")
            }
            for line in measurements.split(separator: "\n") {
                // Date Time IP L St 123 567 ABCD LP RP Score Offset Peer-delay ...
                let f = line.split(separator: " ", omittingEmptySubsequences: true)
                guard f.count >= 13, let date = formatter.date(from: "\(f[0]) \(f[1])"), date >= from.addingTimeInterval(-1),
                      let offset = Double(f[11]), let delay = Double(f[12]) else { continue }
                // The bracket any two-way exchange gives: half its round trip.
                raw.add(signed: offset * 1e9, bound: delay / 2 * 1e9, closure: nil, pair: "h\(h)->\(f[2])")
            }
        }
        return (Summary(series), Summary(raw))
    }
}
