import ArgumentParser
import Foundation
import LockstepCore
import LockstepLab
import LockstepPeerWire
import LockstepSimKit

/// `lockstep-bench scale-sim`: what the peer protocol itself costs and how well it keeps time, by
/// group size, on simulated hosts (no lab, no root).
///
/// The lab's `scale` bench runs real agents, each with its own avahi-daemon, and so stops at the
/// size two cores hold (32). This one runs every agent's pure core (``Node``, the same code the
/// agent runs) on its own simulated device clock (random offset within ±30 s and skew within
/// ±200 ppm), joined by a simulated LAN (100 µs ± 10 µs each way, transmit timestamps as on
/// Linux; optional loss), in simulated time (``GroupSimulation``), so 64 and 128 devices take
/// seconds. Per size: every host learns of every other at time 0 (as DNS-SD would tell it), or,
/// with `--arrival-gap`, the hosts arrive one by one (each learns of those before it, and they of
/// it), and the bench times how long until each lists all others as reachable and counts what
/// each sent until the idle window (formation); after `--settle`, over
/// `--seconds` of idle group, it counts every datagram each node sends (by message type; bytes as
/// sealed on the wire: header, padded message, tag) and reads every node's resolved estimate of
/// every other once a second against the simulated truth (direct links and composed paths
/// apart). Then a player with a 20 ms start latency joins every node, and `--plays` rounds of
/// play, seek and pause, each at the next host, give each command's time to reach every player
/// and the spread of the true instants at which the players are told to start.
///
/// What it does not show: the shell's cost (sealing, system calls, wake-ups, which are most of a
/// real agent's CPU: `scale` measures that) and discovery's (avahi). Its CPU figure is the
/// simulation's own: the cores' CPU plus the simulator's, per simulated agent.
struct SimScaleBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scale-sim",
        abstract: "The peer protocol's own idle traffic per agent, clock error on direct and composed paths, time to all reachable and command reach, by group size (simulated hosts, no root).")

    @Flag(help: "Print one JSON object instead of a table.")
    var json = false

    @Option(help: "Group sizes, comma-separated (2…256; membership tracks at most 64 peers, so past 65 hosts some are refused).")
    var hosts = "8,16,32,64"

    @Option(help: "Simulated seconds after all are reachable before measuring (the clock bursts end).")
    var settle = 20.0

    @Option(help: "Simulated seconds of idle measurement (clock read once a second).")
    var seconds = 30.0

    @Option(help: "Rounds of play, seek and pause after the idle window (0: none).")
    var plays = 5

    @Option(help: "Datagrams lost, percent, each independently.")
    var loss = 0.0

    @Option(help: "Seed of the clocks and the network.")
    var seed: UInt64 = 1

    @Option(help: "Seconds between the devices' arrivals, one by one as the lab starts them (0: all meet at time 0). Each arrival moves the clock grid.")
    var arrivalGap = 0.0

    static let sealedOverhead = Envelope.headerBytes + Envelope.tagBytes
    static let startLatency: Int64 = 20_000_000
    static let item = ItemID("file:///bench/scale-sim.mkv")!

    var sizes: [Int] { hosts.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) } }

    func validate() throws {
        guard !sizes.isEmpty, sizes.allSatisfy({ (2...256).contains($0) }) else { throw ValidationError("--hosts must list sizes within 2…256") }
        guard (1...600).contains(seconds), (0...600).contains(settle) else { throw ValidationError("--seconds must be within 1…600 and --settle within 0…600") }
        guard (0...100).contains(plays) else { throw ValidationError("--plays must be within 0…100") }
        guard (0..<50).contains(loss) else { throw ValidationError("--loss must be within 0…50 (percent)") }
        guard (0...10).contains(arrivalGap) else { throw ValidationError("--arrival-gap must be within 0…10 (seconds)") }
    }

    func run() throws {
        var report = Report(benchmark: "scale-sim")
        report.parameters = [
            "hosts": hosts, "arrival_gap_s": fmt(arrivalGap, 2), "settle_s": fmt(settle, 0), "idle_s": fmt(seconds, 0), "plays": String(plays), "loss_percent": fmt(loss, 1), "seed": String(seed),
            "clocks": "each host's own: offset within ±30 s, skew within ±200 ppm (simulated truth)",
            "network": "100 µs ± 10 µs each way, uniform; transmit timestamps (follow-ups and results, as on Linux)",
            "traffic": "datagrams each node sends over the idle window, by message type; bytes as sealed (36-byte header, padded message, 16-byte tag), without IP and UDP headers",
            "formation": "datagrams and clock requests each node sent from the first arrival until the idle window (all reachable, then --settle)",
            "all_reachable": "from the last arrival until every node lists every other as reachable",
            "timer_wakeups": "ticks each node's timer ran over the idle window (its shell's one timer, re-armed after every event); datagram wake-ups come on top",
            "cpu": "CPU of the simulation over the idle window (every node's core and the simulator) per simulated agent, % of one core: not the shell's sealing, system calls and wake-ups",
            "reach": "per command: from its issue until every host's player has been told the timeline it set (simulated time)",
            "command_cpu": "per command: CPU of the simulation over the 50 ms after its issue (every node's core handling it, and the simulator), less the idle window's CPU for as long, per simulated agent, µs: what replicating one command and telling every player costs a core at this size",
            "start_spread": "per play: max − min of the true instants at which the players are told to start; late: told with less than the player's 20 ms start latency left",
        ]
        var rows: [[String: String]] = []
        var byType: [String: [Int: Double]] = [:], formationByType: [String: [Int: Double]] = [:]
        let order = "hosts,all reachable s,formation dg,formation clock req,formation losses,measured peers,dg/s,bytes/s,clock dg/s,timer wake-ups/s,cpu %,unresolved %,clock p50 us,clock p99 us,coverage %,composed p99 us,composed coverage %,bound/p99,composed bound/p99,reach p50 ms,reach p99 ms,command cpu us,start spread p99 us,late"
        for n in sizes {
            FileHandle.standardError.write(Data("  \(n) hosts…\n".utf8))
            var row = measure(n, into: &report, byType: &byType, formationByType: &formationByType)
            FileHandle.standardError.write(Data(("  " + order.split(separator: ",").map { "\($0)=\(row[String($0)] ?? "-")" }.joined(separator: " ") + "\n").utf8))
            row["_order"] = order
            rows.append(row)
        }
        report.tables["by group size: per simulated agent (unresolved: readings of a peer with no estimate, direct or composed)"] = rows
        let columns = "type," + sizes.map(String.init).joined(separator: ",")
        report.tables["datagrams per agent per second, by message type (columns: hosts)"] = byType.keys.sorted().map { type in
            var r = ["_order": columns, "type": type]
            for n in sizes { r[String(n)] = fmt(byType[type]?[n] ?? 0, 2) }
            return r
        }
        report.tables["formation datagrams per agent, by message type (columns: hosts)"] = formationByType.keys.sorted().map { type in
            var r = ["_order": columns, "type": type]
            for n in sizes { r[String(n)] = fmt(formationByType[type]?[n] ?? 0, 0) }
            return r
        }
        report.print(json: json)
    }

    private func measure(_ n: Int, into report: inout Report, byType: inout [String: [Int: Double]], formationByType: inout [String: [Int: Double]]) -> [String: String] {
        let s = Nanos.second, ms = Nanos.millisecond
        var network = GroupSimulation.Network(loss: loss / 100)
        network.transmitTimestamps = true
        var sim = GroupSimulation(hosts: n, seed: seed &+ UInt64(n), network: network, discovered: arrivalGap == 0)
        let f = "h\(n)_"

        // Every host knows every other's endpoint at 0, or each learns of those before it (and
        // they of it) as it arrives; until each lists all others as reachable.
        for k in 0..<n where arrivalGap > 0 {
            sim.run(until: Int64((Double(k) * arrivalGap * 1e9).rounded()))
            for j in 0..<k {
                sim.see(k, j)
                sim.see(j, k)
            }
        }
        let lastArrival = sim.now
        var reachableAfter = Double.nan
        while sim.now < lastArrival + 60 * s {
            sim.run(for: 10 * ms)
            if sim.hosts.allSatisfy({ $0.node.membership.reachable.count == n - 1 }) {
                reachableAfter = Double(sim.now - lastArrival) / 1e9
                break
            }
        }
        sim.run(for: Int64(settle * 1e9))
        var formation = 0, formationRequests = 0
        var formationLosses = 0
        for host in sim.hosts {
            for entry in host.log {
                if case .membership(.stateChanged(_, .reachable, .lost)) = entry.directive { formationLosses += 1 }
                guard let sent = Self.datagram(entry.directive) else { continue }
                formation += 1
                formationByType[sent.type.description, default: [:]][n, default: 0] += 1 / Double(n)
                if sent.type == .clockRequest || sent.type == .interleavedRequest { formationRequests += 1 }
            }
        }

        // The idle window: datagrams from the nodes' logs, the clock once a second.
        let from = sim.now
        let marks = sim.hosts.map(\.log.count)
        let ticksBefore = sim.hosts.map(\.ticks)
        var direct: [Double] = [], composed: [Double] = [], directBounds: [Double] = [], composedBounds: [Double] = []
        var directCovered = 0, composedCovered = 0, unresolved = 0
        var cpu = 0.0
        for _ in 0..<Int(seconds.rounded(.up)) {
            let before = Self.threadCPU()
            sim.run(for: s)
            cpu += Self.threadCPU() - before
            for i in 0..<n {
                for j in 0..<n where j != i {
                    guard let r = sim.resolvedError(i, of: j) else { unresolved += 1; continue }
                    let error = r.error.magnitude, bound = r.bound
                    if r.direct {
                        direct.append(error)
                        directBounds.append(bound)
                        if error <= bound { directCovered += 1 }
                    } else {
                        composed.append(error)
                        composedBounds.append(bound)
                        if error <= bound { composedCovered += 1 }
                    }
                }
            }
        }
        let window = Double(sim.now - from) / 1e9
        var datagrams = 0, bytes = 0, clockDatagrams = 0
        var counts: [String: Int] = [:]
        for i in 0..<n {
            for entry in sim.hosts[i].log[marks[i]...] {
                guard let (type, message) = Self.datagram(entry.directive) else { continue }
                let size = Envelope.pad(message.encoded()).count + Self.sealedOverhead
                datagrams += 1
                bytes += size
                counts[type.description, default: 0] += 1
                if [.clockRequest, .clockReply, .clockFollowUp, .clockResult, .interleavedRequest, .interleavedReply].contains(type) { clockDatagrams += 1 }
            }
        }
        let perAgent = { (count: Int) in Double(count) / Double(n) / window }
        let ticks = zip(sim.hosts, ticksBefore).reduce(0) { $0 + $1.0.ticks - $1.1 }
        for (type, count) in counts { byType[type, default: [:]][n] = perAgent(count) }
        let measured = Stats(sim.hosts.map { Double($0.node.clocks.measured.count) })
        let d = Stats(direct), c = Stats(composed), db = Stats(directBounds), cb = Stats(composedBounds)
        let coverage = direct.isEmpty ? Double.nan : Double(directCovered) / Double(direct.count) * 100
        let composedCoverage = composed.isEmpty ? Double.nan : Double(composedCovered) / Double(composed.count) * 100
        let cpuPercent = cpu / Double(n) / window * 100
        let readings = unresolved + direct.count + composed.count
        let unresolvedPercent = readings == 0 ? Double.nan : Double(unresolved) / Double(readings) * 100

        report.figures[f + "all_reachable_s"] = reachableAfter
        report.figures[f + "formation_datagrams_per_agent"] = Double(formation) / Double(n)
        report.figures[f + "formation_clock_requests_per_agent"] = Double(formationRequests) / Double(n)
        report.figures[f + "formation_losses"] = Double(formationLosses)
        report.figures[f + "measured_peers_median"] = measured.median
        report.figures[f + "datagrams_per_s_per_agent"] = perAgent(datagrams)
        report.figures[f + "bytes_per_s_per_agent"] = perAgent(bytes)
        report.figures[f + "clock_datagrams_per_s_per_agent"] = perAgent(clockDatagrams)
        report.figures[f + "timer_wakeups_per_s_per_agent"] = perAgent(ticks)
        report.figures[f + "simulation_cpu_percent_per_agent"] = cpuPercent
        report.figures[f + "clock_unresolved_percent"] = unresolvedPercent
        report.figures[f + "clock_direct_p50_us"] = d.median / 1e3
        report.figures[f + "clock_direct_p99_us"] = d.percentile(99) / 1e3
        report.figures[f + "clock_coverage_percent"] = coverage
        report.figures[f + "clock_bound_median_us"] = db.median / 1e3
        if c.count > 0 {
            report.figures[f + "clock_composed_p99_us"] = c.percentile(99) / 1e3
            report.figures[f + "clock_composed_coverage_percent"] = composedCoverage
            report.figures[f + "clock_composed_bound_median_us"] = cb.median / 1e3
        }
        report.goal("\(n) hosts: all reachable (protocol only, discovery excluded)", target: "< 3 s", measured: "\(fmt(reachableAfter, 2)) s", met: reachableAfter < 3)
        report.goal("\(n) hosts: every peer's clock known to every node (direct or composed)", target: "0 % unresolved", measured: "\(fmt(unresolvedPercent, 2)) % of \(readings) readings", met: unresolved == 0)
        report.goal("\(n) hosts: clock p99 (direct)", target: "<= 5 us", measured: "\(fmt(d.percentile(99) / 1e3, 2)) us", met: d.percentile(99) <= 5_000)
        if c.count > 0 {
            report.goal("\(n) hosts: clock p99 (composed, two hops)", target: "<= 5 us", measured: "\(fmt(c.percentile(99) / 1e3, 2)) us", met: c.percentile(99) <= 5_000)
        }
        report.goal("\(n) hosts: bound coverage", target: ">= 99 %", measured: "\(fmt(coverage, 2)) % (composed \(c.count > 0 ? fmt(composedCoverage, 2) + " %" : "-"))",
                    met: coverage >= 99 && (c.count == 0 || composedCoverage >= 99))
        report.goal("\(n) hosts: bound (median) within 3x the error p99 (direct)", target: "<= \(fmt(3 * d.percentile(99) / 1e3, 2)) us", measured: "\(fmt(db.median / 1e3, 2)) us", met: db.median <= 3 * d.percentile(99))
        if c.count > 0 {
            report.goal("\(n) hosts: bound (median) within 3x the error p99 (composed)", target: "<= \(fmt(3 * c.percentile(99) / 1e3, 2)) us", measured: "\(fmt(cb.median / 1e3, 2)) us", met: cb.median <= 3 * c.percentile(99))
        }
        var row = [
            "hosts": String(n), "all reachable s": fmt(reachableAfter, 2), "measured peers": fmt(measured.median, 0),
            "formation dg": fmt(Double(formation) / Double(n), 0), "formation clock req": fmt(Double(formationRequests) / Double(n), 0), "formation losses": String(formationLosses),
            "dg/s": fmt(perAgent(datagrams), 1), "bytes/s": fmt(perAgent(bytes), 0), "clock dg/s": fmt(perAgent(clockDatagrams), 1),
            "timer wake-ups/s": fmt(perAgent(ticks), 1),
            "cpu %": fmt(cpuPercent, 3), "unresolved %": fmt(unresolvedPercent, 2),
            "clock p50 us": fmt(d.median / 1e3, 2), "clock p99 us": fmt(d.percentile(99) / 1e3, 2), "coverage %": fmt(coverage, 2),
            "composed p99 us": c.count > 0 ? fmt(c.percentile(99) / 1e3, 2) : "-", "composed coverage %": c.count > 0 ? fmt(composedCoverage, 2) : "-",
            "bound/p99": fmt(db.median / d.percentile(99), 2), "composed bound/p99": c.count > 0 ? fmt(cb.median / c.percentile(99), 2) : "-",
        ]
        guard plays > 0 else { return row }

        let p = commands(&sim, idleCPUPerSecond: cpu / window)
        report.figures[f + "command_reach_p50_ms"] = p.reach.median
        report.figures[f + "command_reach_p99_ms"] = p.reach.percentile(99)
        report.figures[f + "start_spread_p99_us"] = p.spread.percentile(99)
        report.figures[f + "late_starts"] = Double(p.late)
        report.figures[f + "commands_missed"] = Double(p.missed)
        report.figures[f + "command_cpu_us_per_agent_p50"] = p.cpu.median
        report.goal("\(n) hosts: start spread p99", target: "≤ 1 ms", measured: "\(fmt(p.spread.percentile(99), 1)) µs (\(p.spread.count) of \(plays) plays)",
                    met: p.spread.percentile(99) <= 1_000 && p.spread.count == plays)
        report.goal("\(n) hosts: command reaches all p99", target: "< 30 ms", measured: "\(fmt(p.reach.percentile(99), 2)) ms (\(p.reach.count) of \(3 * plays) commands)",
                    met: p.reach.percentile(99) < 30 && p.missed == 0)
        row["reach p50 ms"] = fmt(p.reach.median, 2)
        row["reach p99 ms"] = fmt(p.reach.percentile(99), 2)
        row["command cpu us"] = fmt(p.cpu.median, 1)
        row["start spread p99 us"] = fmt(p.spread.percentile(99), 1)
        row["late"] = "\(p.late)/\(p.starts)"
        return row
    }

    /// The datagram a node's directive sends, if it sends one: its type, and the message (clock
    /// requests and replies as the shell would send them, but for the time it stamps).
    static func datagram(_ directive: NodeDirective) -> (type: MessageType, message: PeerMessage)? {
        let message: PeerMessage
        switch directive {
        case .send(let m, _): message = m
        // (Stamped by the shell: the size is the same whatever the time.)
        case .sendClockRequest(let exchange, _, let form): message = form.message(exchange: exchange, t1: LocalTime(ns: 0))
        case .sendClockReply(let exchange, let echo, let t2, _, let form): message = form.message(exchange: exchange, echo: echo, t2: t2, t3: t2)
        default: return nil
        }
        return (MessageType(message), message)
    }

    /// A player (start latency 20 ms) joins every host and loads the item; then rounds of play,
    /// seek and pause, each at the next host. Returns each command's reach (ms) and each play's
    /// start spread (µs), from the players' instructions in the hosts' logs, and each command's
    /// CPU per agent (µs) over the window after its issue, the idle rate taken out.
    private func commands(_ sim: inout GroupSimulation, idleCPUPerSecond: Double) -> (reach: Stats, spread: Stats, late: Int, starts: Int, missed: Int, cpu: Stats) {
        let n = sim.hosts.count, ms = Nanos.millisecond
        for i in 0..<n {
            let info = PlayerSession.Info(name: "p\(i)", canChangeRate: true, exactSeek: true, startLatency: .nanoseconds(Self.startLatency))
            sim.execute(i, sim.hosts[i].node.onPlayerHello(id: 1, info: info, now: sim.local(i)))
            sim.execute(i, sim.hosts[i].node.onPlayerLoad(id: 1, item: Self.item, metadata: .init(title: "Scale"), solo: false, now: sim.local(i)))
            sim.run(for: 5 * ms)
        }
        sim.run(for: 500 * ms)
        for i in 0..<n { sim.execute(i, sim.hosts[i].node.onPlayerReadiness(id: 1, .ready, now: sim.local(i))) }
        sim.run(for: 1_000 * ms)

        var issued: [(stamp: Stamp, at: Int64, play: Bool)] = [], missed = 0, next = 0, cpu: [Double] = []
        let window = 50 * ms
        for round in 0..<plays {
            let commands: [(GroupCommand, pause: Int64)] = [
                (.play(rate: nil), 700 * ms),
                (.seek(position: MediaPosition(clamping: Int64(round % 80 + 1) * 7_000_000_000)), 500 * ms),
                (.pause, 400 * ms),
            ]
            for (command, pause) in commands {
                let host = next % n
                next += 1
                let at = sim.now
                let before = Self.threadCPU()
                sim.issue(host, command)
                if let stamp = sim.hosts[host].node.group.state.items[Self.item]?.stamp, !issued.contains(where: { $0.stamp == stamp }) {
                    issued.append((stamp, at, { if case .play = command { true } else { false } }()))
                } else {
                    missed += 1
                }
                sim.run(for: window)
                cpu.append((Self.threadCPU() - before - idleCPUPerSecond * Double(window) / 1e9) / Double(n) * 1e6)
                sim.run(for: pause - window)
            }
        }
        var reach: [Double] = [], spread: [Double] = [], late = 0, starts = 0
        for c in issued {
            var told: [(time: Int64, start: Int64)] = []
            for i in 0..<n {
                let hit = sim.hosts[i].log.first { entry in
                    guard entry.time >= c.at, case .tellPlayer(1, .timeline(_, _, _, _, _, let record)) = entry.directive else { return false }
                    return record.stamp == c.stamp
                }
                guard let hit, case .tellPlayer(_, .timeline(_, _, _, _, let at, _)) = hit.directive else { continue }
                told.append((hit.time, sim.trueTime(i, local: at)))
            }
            guard told.count == n, let last = told.map(\.time).max() else {
                missed += 1
                FileHandle.standardError.write(Data("  command \(c.stamp): \(told.count) of \(n) players told\n".utf8))
                continue
            }
            reach.append(Double(last - c.at) / 1e6)
            if c.play, let lo = told.map(\.start).min(), let hi = told.map(\.start).max() {
                spread.append(Double(hi - lo) / 1e3)
                starts += n
                late += told.filter { $0.start - $0.time < Self.startLatency }.count
            }
        }
        return (Stats(reach), Stats(spread), late, starts, missed, Stats(cpu))
    }

    /// This thread's CPU time, seconds.
    static func threadCPU() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
}
