import ArgumentParser
import Foundation
import LockstepClient
import LockstepCore
import LockstepLab
import LockstepPlayerProtocol

/// Time from a command on one peer until every peer holds it.
struct MergeBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "merge",
        abstract: "Time from a command on one peer until all peers hold it (plain link, 10% loss); partitions and concurrent commands: which intents held, time to one state.")

    @OptionGroup var options: BenchOptions

    @Option(help: "Hosts in the lab.")
    var hosts = 5

    @Option(help: "Commands per scenario.")
    var commands = 100

    @Flag(help: "Skip the partition and concurrent-command scenarios.")
    var noScenarios = false

    /// Receipt times of state changes, per (origin, lamport), per host.
    actor Arrivals {
        var seen: [String: [Int: Int64]] = [:]
        func record(_ key: String, host: Int, at t: Int64) {
            seen[key, default: [:]][host] = seen[key]?[host] ?? t
        }
        func times(_ key: String) -> [Int: Int64] { seen[key] ?? [:] }
    }

    func run() async throws {
        try options.check()
        var report = Report(benchmark: "merge")
        report.parameters = [
            "hosts": String(hosts), "commands_per_scenario": String(commands),
            "measure": "from just before a command is sent to one agent until every agent (the issuer included) reports the change on its event stream; commands from a different host each time, 50-150 ms apart",
        ]
        var rows: [[String: String]] = []
        for (name, impair) in [("plain link", nil), ("10% loss", "loss=10%")] as [(String, String?)] {
            options.progress("\(name)")
            let lab = try Lab(hosts: hosts, name: "bm")
            defer { lab.destroy() }
            for h in 1...hosts { try lab.startAgent(h, flags: impair.map { ["--impair", $0] } ?? []) }
            _ = try await waitUntil(timeout: 20) {
                for h in 1...hosts {
                    let p: PeersResult = try await lab.request(h, "peers")
                    if p.peers.filter({ $0.state == "reachable" }).count < hosts - 1 { return false }
                }
                return true
            }
            try await Task.sleep(nanoseconds: 2_000_000_000)
            let arrivals = Arrivals()
            var clients: [Int: PersistentClient] = [:]
            for h in 1...hosts { clients[h] = try await PersistentClient(socketPath: lab.socket(h)) }
            var listeners: [Task<Void, Never>] = []
            for h in 1...hosts {
                let client = clients[h]!
                let _: GroupStateView = try await client.request("subscribe", SubscribeRequest(topics: [.state]))
                listeners.append(Task {
                    for await event in client.events where event.name == "state_changed" {
                        let t = MonotonicClock.read()
                        guard let e = try? event.decode(StateChangedEvent.self) else { continue }
                        await arrivals.record("\(e.origin.peerID)/\(e.origin.lamport)", host: h, at: t)
                    }
                })
            }
            try await Task.sleep(nanoseconds: 300_000_000)
            let _: GroupStateView = try await lab.request(1, "command", CommandRequest(action: .load, item: "bench-merge"))
            try await Task.sleep(nanoseconds: 300_000_000)
            var latencies: [Double] = []
            var incomplete = 0
            // Each command changes the state (a rate equal to the current one would change nothing).
            let actions: [CommandRequest] = [
                .init(action: .play), .init(action: .pause), .init(action: .seek, positionNs: 10_000_000_000), .init(action: .rate, rate: 1.25),
                .init(action: .play), .init(action: .pause), .init(action: .seek, positionNs: 20_000_000_000), .init(action: .rate, rate: 1),
            ]
            for i in 0..<commands {
                let host = i % hosts + 1
                let sent = MonotonicClock.read()
                let state: GroupStateView = try await clients[host]!.request("command", actions[i % actions.count])
                guard let o = state.item?.origin else { continue }
                let key = "\(o.peerID)/\(o.lamport)"
                var all: [Int: Int64] = [:]
                _ = await waitUntil(timeout: 3, interval: 0.002) {
                    all = await arrivals.times(key)
                    return all.count == hosts
                }
                if all.count == hosts {
                    latencies.append(Double(all.values.max()! - sent) / 1e6)
                } else {
                    incomplete += 1
                }
                try await Task.sleep(nanoseconds: UInt64.random(in: 50_000_000...150_000_000))
            }
            for l in listeners { l.cancel() }
            for c in clients.values { c.close() }
            let s = Stats(latencies)
            report.figures["\(name) p50 ms"] = s.median
            report.figures["\(name) p99 ms"] = s.percentile(99)
            rows.append(["_order": "scenario,commands,p50 ms,p95 ms,p99 ms,max ms,not everywhere within 3 s",
                         "scenario": name, "commands": String(latencies.count + incomplete), "p50 ms": fmt(s.median, 2), "p95 ms": fmt(s.percentile(95), 2),
                         "p99 ms": fmt(s.percentile(99), 2), "max ms": fmt(s.max, 2), "not everywhere within 3 s": String(incomplete)])
            if impair == nil {
                report.goal("plain link: command held by all peers", target: "p99 < 20 ms", measured: "p99 \(fmt(s.percentile(99), 2)) ms", met: s.percentile(99) < 20 && incomplete == 0)
            }
        }
        report.tables["time from a command on one peer until all peers hold it"] = rows
        if !noScenarios { try await scenarios(&report) }
        report.print(json: options.json)
    }

    /// Partitions and concurrent commands on real agents: which intents held, and how long the
    /// group took to agree.
    func scenarios(_ report: inout Report) async throws {
        var rows: [[String: String]] = []
        let runs: [(String, () async throws -> MergeScenarios.Outcome)] = [
            ("seeks-then-pause", { try await MergeScenarios.seeksThenPause() }),
            ("seek-and-pause", { try await MergeScenarios.seekAndPause() }),
            ("three-way", { try await MergeScenarios.threeWay() }),
        ]
        for (key, run) in runs {
            options.progress(key)
            let o = try await run()
            report.figures["\(key) one state s"] = o.convergedS ?? -1
            rows.append([
                "_order": "scenario,ended,position s,rate,last change,one state after s,crossing reported,expected",
                "scenario": o.name, "ended": o.phase ?? "agents disagree", "position s": o.positionS.map { fmt($0, 3) } ?? "-",
                "rate": o.rate.map { fmt($0, 2) } ?? "-", "last change": o.lastAction ?? "-", "one state after s": o.convergedS.map { fmt($0, 2) } ?? "never",
                "crossing reported": o.concurrencyReported ? "every agent" : "not everywhere", "expected": o.expectation,
            ])
            report.goal("\(o.name): the intents hold", target: o.expectation, measured: "\(o.phase ?? "-") at \(o.positionS.map { fmt($0, 3) } ?? "-") s ×\(o.rate.map { fmt($0, 2) } ?? "-")", met: o.met)
        }
        report.tables["partitions and concurrent commands: which intents held (real agents, simulated clocks seconds apart)"] = rows
    }
}
