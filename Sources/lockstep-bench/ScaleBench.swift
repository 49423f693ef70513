import ArgumentParser
import Foundation
import LockstepLab
import LockstepPlayerProtocol

/// What an idle group costs each agent, and how well it keeps time, by group size.
///
/// Per size: a lab of that many hosts (each with its own avahi-daemon), one agent per host, all
/// started together. Measured: the time until every agent lists every other as reachable (from
/// the last agent's start); then, after `--settle` seconds (the clock bursts are over), each
/// agent's CPU (``CPUTime``: the scheduler's run time of its threads, to the nanosecond), its resident memory (RSS, and PSS: the
/// shared library pages split among the agents that map them), and the UDP datagrams and bytes
/// its host sends (the host's `/proc/net/snmp` and `eth0` counters: the agent and its avahi),
/// over `--seconds`; nothing else talks to the agents meanwhile. Last, the clock: every agent's
/// `clock` view, once a second for `--clock-seconds`. All hosts share one kernel clock and no
/// clock is simulated, so the true offset between any two is zero and the offset an agent
/// reports *is* its error; `direct` rows are measured links, `composed` ones two-hop paths.
/// With `--discovery static` the hosts run no avahi-daemon and every agent is given every other
/// one's address (`--peer`, as on a network without multicast): what the agents themselves cost
/// at sizes whose avahi-daemons would not fit this machine (64 daemons saturate 2 cores).
/// Then, unless `--plays 0`, the players (``ScalePlays``): a reference player joins every agent,
/// and `--plays` rounds of play, seek and pause at one host after another give the spread of the
/// players' start instants per play and each command's time to reach every player.
struct ScaleBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scale",
        abstract: "Idle cost per agent (CPU, memory, datagrams), time to all reachable, clock error, reference players' start spread and command-to-all time, by group size.")

    @OptionGroup var options: BenchOptions

    @Option(help: "Group sizes, comma-separated.")
    var hosts = "8,16,32,64"

    @Option(help: "Seconds after all are reachable before measuring (the clock bursts end).")
    var settle = 20.0

    @Option(help: "Seconds of idle measurement.")
    var seconds = 30.0

    @Option(help: "Seconds of clock readings (one per agent per second) after the idle measurement.")
    var clockSeconds = 10.0

    @Option(help: "Rounds of play, seek and pause with a reference player on every host, after the clock readings (0: none).")
    var plays = 5

    /// How the agents find each other.
    enum Discovery: String, ExpressibleByArgument, CaseIterable {
        /// DNS-SD, each host with its own avahi-daemon (as deployed).
        case dnssd
        /// No avahi: every agent is configured with every other one's address.
        case `static`
    }

    @Option(help: "How agents find each other: dnssd (an avahi-daemon per host) or static (no avahi; every agent given every other's address with --peer).")
    var discovery = Discovery.dnssd

    /// The UDP port every agent listens on with `--discovery static` (each host has its own
    /// network namespace, so one port for all).
    static let staticPort = 4400

    /// One agent's counters at one moment.
    struct Sample {
        var cpu: CPUTime
        var udpOut: Double
        var txBytes: Double
    }

    func run() async throws {
        try options.check()
        var report = Report(benchmark: "scale")
        report.parameters = [
            "hosts": hosts, "settle_s": fmt(settle, 0), "idle_s": fmt(seconds, 0), "clock_s": fmt(clockSeconds, 0),
            "cpu": "run time of each lockstepd's threads over the idle window (the scheduler's, /proc/PID/task/*/schedstat; utime+stime if a thread ended meanwhile), % of one core",
            "traffic": "UDP datagrams and eth0 bytes sent by each lab host (its agent and its avahi-daemon)",
            "truth": "one kernel clock, no simulated clocks: the reported offset is the error",
            "machine": "\(ProcessInfo.processInfo.activeProcessorCount) cores, shared with whatever else runs",
            "plays": String(plays),
            "discovery": discovery == .dnssd
                ? "dnssd: an avahi-daemon per host"
                : "static: no avahi-daemon; every agent started with --port \(Self.staticPort) and --peer for every other host (its clock reports count: configured peers are vouched for)",
            "all_reachable": "from the last agent's start until every agent lists every other one as reachable, by peer id, at the instant the last pair became so by the agents' own record (state_age_ns, dated when the answer arrived); all named: until a poll (every 0.2 s, each agent asked in turn) saw every agent list every other one by its name (hN), which comes with the peer's hello",
            "pair_reachable": "for each agent and each other one, from the later of the two starts (when the bench's start of it returned) until the agent listed the other as reachable, by its own record; median and p90 of all pairs (a pair lost and met again counts from its last meeting)",
            "formation": "from each agent's start until the idle window (all reachable, then --settle): UDP datagrams its host sent and the agent's CPU, median of the agents",
            "discovery_cpu": "from the first agent's start until all are reachable: the CPU every avahi-daemon used and every agent used, each as a share of all the machine's cores (100 % = the whole machine)",
            "start_spread": "per play: max − min of the instants at which the reference players start (their logs, CLOCK_MONOTONIC shared by all hosts); each player lands within ±100 µs of the instant it is told (its modelled jitter), and one told too late for its 20 ms start latency starts late (late starts: more than 0.2 ms after the play's instant, of all players' starts)",
            "playing_cpu": "after the commands, the group playing \(Int(ScalePlays.playingSeconds)) s with nobody commanding (from 2 s after a play): CPU per agent, median and max (% of one core), each agent's player reporting its position ten times a second; and the reference players' CPU (median), which includes writing their own logs",
            "command_reach": "per command (play, seek, pause, each at the next host): from just before the bench sends it to one agent until the last reference player has received the timeline it set (the player's log; the agents' replication and each agent's delivery to its player)",
        ]
        var rows: [[String: String]] = []
        let order = "hosts,all reachable s,all named s,pair p90 s,formation dg,formation cpu s,discovery avahi %,discovery agents %,cpu median %,cpu max %,avahi cpu median %,rss median MiB,pss median MiB,threads,udp dg/s,tx bytes/s,clock p50 us,clock p99 us,coverage %,composed n,composed p99 us,composed coverage %,load,start spread p50 us,start spread p99 us,start spread max us,reach p50 ms,reach p99 ms,reach max ms,playing cpu median %,playing cpu max %,player cpu %,missed,late starts"
        for n in hosts.split(separator: ",").compactMap({ Int($0) }) {
            options.progress("\(n) hosts")
            var row = try await measure(n, into: &report)
            // Each size's figures as soon as they are known: a larger size may not fit.
            options.progress(order.split(separator: ",").map { "\($0)=\(row[String($0)] ?? "?")" }.joined(separator: " "))
            row["_order"] = order
            rows.append(row)
        }
        report.tables["by group size: idle cost per agent, clock error, reference players"] = rows
        report.print(json: options.json)
    }

    /// How long after the later of its two agents started each agent listed the other as
    /// reachable (`instants`: the agents' record): what "all reachable" is made of, a line that
    /// names the slowest pair and the last, and the lags' median and p90. A pair lost and met
    /// again counts from its last meeting.
    static func pairLags(_ instants: [Int: [Int: Date]], started: [Int: Date], lastStart: Date) -> (line: String, p50: Double, p90: Double) {
        var lags: [(lag: Double, host: Int, other: Int, at: Double)] = []
        for (h, others) in instants {
            for (o, at) in others {
                guard let a = started[h], let b = started[o] else { continue }
                lags.append((at.timeIntervalSince(max(a, b)), h, o, at.timeIntervalSince(lastStart)))
            }
        }
        guard let last = lags.max(by: { $0.at < $1.at }), let slowest = lags.max(by: { $0.lag < $1.lag }) else { return ("  no pairs", .nan, .nan) }
        let stats = Stats(lags.map(\.lag))
        let line = "  pairs listed reachable after the later of the two started: p50 \(fmt(stats.median)) s, p90 \(fmt(stats.percentile(90))) s, max \(fmt(stats.max)) s (h\(slowest.host) listing h\(slowest.other)); the last, h\(last.host) listing h\(last.other), \(fmt(last.at)) s after the last start, \(fmt(last.lag)) s after the later of the two"
        return (line, stats.median, stats.percentile(90))
    }

    private func measure(_ n: Int, into report: inout Report) async throws -> [String: String] {
        let lab = try Lab(hosts: n, avahi: discovery == .dnssd, name: "bs\(n)")
        defer { lab.destroy() }
        let avahiPids = (1...n).compactMap { try? lab.pid(of: "avahi", on: $0) }
        let avahiAtStart = avahiPids.map { CPUTime(pid: $0) }
        var flags: [Int: [String]] = [:]
        if discovery == .static {
            let addresses = try (1...n).map { try lab.address($0) }
            for h in 1...n {
                flags[h] = ["--port", String(Self.staticPort)]
                    + addresses.enumerated().filter { $0.offset != h - 1 }.flatMap { ["--peer", "\($0.element):\(Self.staticPort)"] }
            }
        }
        let firstStart = Date()
        var started: [Int: Date] = [:]
        for h in 1...n {
            try lab.startAgent(h, flags: flags[h] ?? [], wait: false)
            started[h] = Date()
        }
        let lastStart = Date()
        let all = Array(1...n)
        var ids: [Int: String] = [:]
        _ = await waitUntil(timeout: 20, interval: 0.1) {
            ids = (try? await lab.peerIDs(of: all)) ?? [:]
            return ids.count == n
        }
        var instants: [Int: [Int: Date]]?
        _ = await waitUntil(timeout: 60, interval: 0.2) {
            instants = try? await lab.reachableInstants(among: all, ids: ids)
            return instants != nil
        }
        let reachableSince = instants.map { $0.values.flatMap(\.values).max() ?? lastStart }
        let reachableAfter = reachableSince.map { max(0, $0.timeIntervalSince(lastStart)) } ?? .infinity
        let lags = instants.map { Self.pairLags($0, started: started, lastStart: lastStart) }
        if let lags { options.progress(lags.line) }
        // What the machine spent while the agents found each other: every avahi-daemon's CPU
        // and every agent's (from its start), as shares of all the machine's cores.
        let discoveryCapacity = Date().timeIntervalSince(firstStart) * Double(ProcessInfo.processInfo.activeProcessorCount)
        let avahiDiscovery = zip(avahiAtStart, avahiPids.map { CPUTime(pid: $0) }).map { $1.seconds(since: $0) }.reduce(0, +) / discoveryCapacity * 100
        let pids = try (1...n).map { try lab.pid(of: "agent", on: $0) }
        let agentsDiscovery = pids.map { CPUTime(pid: $0).totalSeconds }.reduce(0, +) / discoveryCapacity * 100
        // Names come with each peer's hello, which can lag its reachability (see docs/scale.md).
        let named = await waitUntil(timeout: 60, interval: 0.2) { (try? await lab.allReachable(among: all)) ?? false } ?? .infinity
        let namedAfter = named.isFinite ? Date().timeIntervalSince(lastStart) : .infinity
        options.progress("  all reachable after \(fmt(reachableAfter)) s, all named after \(fmt(namedAfter)) s (meanwhile avahi-daemons \(fmt(avahiDiscovery, 0)) %, agents \(fmt(agentsDiscovery, 0)) % of the machine); settling \(fmt(settle, 0)) s")
        try await Task.sleep(nanoseconds: UInt64(settle * 1e9))

        let before = try (1...n).map { try sample(lab, $0, pid: pids[$0 - 1]) }
        // As scale-sim's formation: from each agent's start until the idle window.
        let formationDatagrams = Stats(before.map(\.udpOut)), formationCPU = Stats(before.map(\.cpu.totalSeconds))
        options.progress("  until the idle window, per agent: \(fmt(formationDatagrams.median, 0)) datagrams sent, \(fmt(formationCPU.median)) s of CPU (median)")
        let avahiBefore = avahiPids.map { CPUTime(pid: $0) }
        let t0 = Date()
        try await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
        let after = try (1...n).map { try sample(lab, $0, pid: pids[$0 - 1]) }
        let avahiAfter = avahiPids.map { CPUTime(pid: $0) }
        let dt = Date().timeIntervalSince(t0)
        let load = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first.map(String.init) ?? "?"

        let cpu = Stats(zip(before, after).map { $1.cpu.seconds(since: $0.cpu) / dt * 100 })
        let avahiCPU = Stats(zip(avahiBefore, avahiAfter).map { $1.seconds(since: $0) / dt * 100 })
        let udp = Stats(zip(before, after).map { ($1.udpOut - $0.udpOut) / dt })
        let tx = Stats(zip(before, after).map { ($1.txBytes - $0.txBytes) / dt })
        let rss = Stats(pids.compactMap { status($0, "VmRSS") }.map { $0 / 1024 })
        let pssMiB = Stats(pids.compactMap { proportionalSetSize($0) }.map { $0 / 1024 })
        let threads = Stats(pids.compactMap { status($0, "Threads") })

        // Clock readings: the offset is the error (one kernel clock).
        var direct: [Double] = [], composed: [Double] = [], bounds: [Double] = [], covered = 0, readings = 0, composedCovered = 0
        let end = Date().addingTimeInterval(clockSeconds)
        while Date() < end {
            for h in 1...n {
                guard let r = try? await lab.request(h, "clock", as: ClockResult.self) else { continue }
                for p in r.peers {
                    readings += 1
                    let within = p.offsetNs.magnitude <= p.errorBoundNs
                    if within { covered += 1 }
                    bounds.append(p.errorBoundNs)
                    if p.source == "direct" {
                        direct.append(p.offsetNs.magnitude)
                    } else {
                        composed.append(p.offsetNs.magnitude)
                        if within { composedCovered += 1 }
                    }
                }
            }
            try await Task.sleep(nanoseconds: 1_000_000_000)
        }
        let d = Stats(direct), c = Stats(composed), b = Stats(bounds)
        let coverage = readings == 0 ? 0 : Double(covered) / Double(readings) * 100
        let composedCoverage = composed.isEmpty ? 0 : Double(composedCovered) / Double(composed.count) * 100
        let errorP99 = Stats(direct + composed).percentile(99)

        let f = "hosts_\(n)_"
        report.figures[f + "all_reachable_s"] = reachableAfter
        report.figures[f + "all_named_s"] = namedAfter
        report.figures[f + "pair_reachable_p50_s"] = lags?.p50 ?? .nan
        report.figures[f + "pair_reachable_p90_s"] = lags?.p90 ?? .nan
        report.figures[f + "formation_datagrams_per_agent"] = formationDatagrams.median
        report.figures[f + "formation_cpu_s_per_agent"] = formationCPU.median
        report.figures[f + "discovery_avahi_machine_percent"] = avahiDiscovery
        report.figures[f + "discovery_agents_machine_percent"] = agentsDiscovery
        report.figures[f + "cpu_median_percent"] = cpu.median
        report.figures[f + "cpu_max_percent"] = cpu.max
        report.figures[f + "avahi_cpu_median_percent"] = avahiCPU.median
        report.figures[f + "rss_median_mib"] = rss.median
        report.figures[f + "pss_median_mib"] = pssMiB.median
        report.figures[f + "udp_datagrams_per_s_median"] = udp.median
        report.figures[f + "tx_bytes_per_s_median"] = tx.median
        report.figures[f + "clock_direct_p50_us"] = d.median / 1e3
        report.figures[f + "clock_direct_p99_us"] = d.percentile(99) / 1e3
        report.figures[f + "clock_coverage_percent"] = coverage
        report.figures[f + "clock_bound_median_us"] = b.median / 1e3
        if c.count > 0 {
            report.figures[f + "clock_composed_p50_us"] = c.median / 1e3
            report.figures[f + "clock_composed_p99_us"] = c.percentile(99) / 1e3
            report.figures[f + "clock_composed_coverage_percent"] = composedCoverage
        }
        let cpuGoal = n <= 8 ? 0.3 : 1.0
        report.goal("\(n) hosts: idle CPU per agent (max)", target: "< \(fmt(cpuGoal, 1)) %", measured: "\(fmt(cpu.max, 2)) %", met: cpu.max < cpuGoal)
        report.goal("\(n) hosts: RSS per agent (median)", target: "< 20 MiB", measured: "\(fmt(rss.median, 1)) MiB", met: rss.median < 20)
        report.goal("\(n) hosts: all reachable", target: "< 3 s", measured: "\(fmt(reachableAfter, 2)) s", met: reachableAfter < 3)
        report.goal("\(n) hosts: clock p99 (direct)", target: "<= 5 us", measured: "\(fmt(d.percentile(99) / 1e3, 2)) us", met: d.percentile(99) <= 5_000)
        if c.count > 0 {
            report.goal("\(n) hosts: clock p99 (composed, two hops)", target: "<= 5 us", measured: "\(fmt(c.percentile(99) / 1e3, 2)) us", met: c.percentile(99) <= 5_000)
        }
        report.goal("\(n) hosts: bound coverage", target: ">= 99 %", measured: "\(fmt(coverage, 2)) % (composed \(c.count > 0 ? fmt(composedCoverage, 2) + " %" : "-"))", met: coverage >= 99)
        report.goal("\(n) hosts: bound (median) within 3x the error p99", target: "<= \(fmt(3 * errorP99 / 1e3, 2)) us", measured: "\(fmt(b.median / 1e3, 2)) us", met: b.median <= 3 * errorP99)
        var row = [
            "hosts": String(n), "all reachable s": fmt(reachableAfter, 2), "all named s": fmt(namedAfter, 2),
            "pair p90 s": fmt(lags?.p90 ?? .nan, 2), "formation dg": fmt(formationDatagrams.median, 0), "formation cpu s": fmt(formationCPU.median, 2),
            "discovery avahi %": fmt(avahiDiscovery, 0), "discovery agents %": fmt(agentsDiscovery, 0), "cpu median %": fmt(cpu.median, 2), "cpu max %": fmt(cpu.max, 2),
            "avahi cpu median %": fmt(avahiCPU.median, 2), "rss median MiB": fmt(rss.median, 1), "pss median MiB": fmt(pssMiB.median, 1),
            "threads": fmt(threads.median, 0), "udp dg/s": fmt(udp.median, 1), "tx bytes/s": fmt(tx.median, 0),
            "clock p50 us": fmt(d.median / 1e3, 2), "clock p99 us": fmt(d.percentile(99) / 1e3, 2), "coverage %": fmt(coverage, 2),
            "composed n": String(c.count), "composed p99 us": c.count > 0 ? fmt(c.percentile(99) / 1e3, 2) : "-",
            "composed coverage %": c.count > 0 ? fmt(composedCoverage, 2) : "-", "load": load,
        ]
        guard plays > 0 else { return row }

        // A size that does not fit (its players never all ready) keeps the figures above.
        let p: ScalePlays
        do {
            p = try await ScalePlays.measure(lab, agents: pids, plays: plays) { options.progress($0) }
        } catch {
            report.notes.append("\(n) hosts: no player figures: \(error)")
            options.progress("  no player figures: \(error)")
            return row
        }
        let s = p.startSpread, r = p.reach
        report.figures[f + "start_spread_p50_us"] = s.median
        report.figures[f + "start_spread_p99_us"] = s.percentile(99)
        report.figures[f + "start_spread_max_us"] = s.max
        report.figures[f + "command_reach_p50_ms"] = r.median
        report.figures[f + "command_reach_p99_ms"] = r.percentile(99)
        report.figures[f + "command_reach_max_ms"] = r.max
        report.figures[f + "playing_cpu_median_percent"] = p.playingAgentCPU.median
        report.figures[f + "playing_cpu_max_percent"] = p.playingAgentCPU.max
        report.figures[f + "playing_player_cpu_median_percent"] = p.playingPlayerCPU.median
        report.figures[f + "commands_missed"] = Double(p.missed)
        report.figures[f + "late_starts"] = Double(p.lateStarts)
        report.goal("\(n) hosts: start spread p99", target: "≤ 1 ms", measured: "\(fmt(s.percentile(99), 1)) µs (\(s.count) of \(plays) plays)",
                    met: s.percentile(99) <= 1000 && s.count == plays)
        report.goal("\(n) hosts: command reaches all p99", target: "< 30 ms", measured: "\(fmt(r.percentile(99), 2)) ms (\(r.count) of \(p.commands) commands)",
                    met: r.percentile(99) < 30 && p.missed == 0)
        row["start spread p50 us"] = fmt(s.median, 1)
        row["start spread p99 us"] = fmt(s.percentile(99), 1)
        row["start spread max us"] = fmt(s.max, 1)
        row["reach p50 ms"] = fmt(r.median, 2)
        row["reach p99 ms"] = fmt(r.percentile(99), 2)
        row["reach max ms"] = fmt(r.max, 2)
        row["playing cpu median %"] = fmt(p.playingAgentCPU.median, 2)
        row["playing cpu max %"] = fmt(p.playingAgentCPU.max, 2)
        row["player cpu %"] = fmt(p.playingPlayerCPU.median, 2)
        row["missed"] = "\(p.missed)/\(p.commands)"
        row["late starts"] = "\(p.lateStarts)/\(p.starts)"
        return row
    }

    private func sample(_ lab: Lab, _ h: Int, pid: Int32) throws -> Sample {
        // Both counters from inside the host's network namespace.
        let text = try lab.exec(h, ["cat", "/proc/net/snmp", "/proc/net/dev"])
        let lines = text.split(separator: "\n")
        let udp = lines.filter { $0.hasPrefix("Udp:") }
        var udpOut = 0.0
        if udp.count >= 2 {
            let names = udp[0].split(separator: " "), values = udp[1].split(separator: " ")
            if let i = names.firstIndex(of: "OutDatagrams"), i < values.count { udpOut = Double(values[i]) ?? 0 }
        }
        var txBytes = 0.0
        if let eth = lines.first(where: { $0.trimmingCharacters(in: .whitespaces).hasPrefix("eth0:") }) {
            let fields = eth.split(separator: ":", maxSplits: 1).last?.split(separator: " ") ?? []
            if fields.count > 8 { txBytes = Double(fields[8]) ?? 0 }
        }
        return Sample(cpu: CPUTime(pid: pid), udpOut: udpOut, txBytes: txBytes)
    }

    /// A `/proc/PID/status` field's number (kB for sizes).
    private func status(_ pid: Int32, _ key: String) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        let line = text.split(separator: "\n").first { $0.hasPrefix(key + ":") }?.replacingOccurrences(of: "\t", with: " ")
        return line?.split(separator: " ").dropFirst().first.flatMap { Double($0) }
    }

    /// Proportional set size, kB (`/proc/PID/smaps_rollup`).
    private func proportionalSetSize(_ pid: Int32) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/smaps_rollup", encoding: .utf8) else { return nil }
        let line = text.split(separator: "\n").first { $0.hasPrefix("Pss:") }
        return line.flatMap { Double($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") }
    }
}
