import ArgumentParser
import Foundation
import LockstepLab
import LockstepPlayerProtocol

/// Time from agent start to all peers reachable, for several lab sizes.
struct DiscoveryBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "discovery", abstract: "Time from agent start until every peer is reachable (3, 8, 16 hosts).")

    @OptionGroup var options: BenchOptions

    @Option(help: "Lab sizes, comma-separated.")
    var sizes = "3,8,16"

    @Option(help: "Runs per size.")
    var runs = 3

    func run() async throws {
        try options.check()
        var report = Report(benchmark: "discovery")
        report.parameters = ["sizes": sizes, "runs_per_size": String(runs), "poll_interval_ms": "20",
                             "measure": "per agent: from its start to every other agent listed reachable; all agents started together"]
        var rows: [[String: String]] = []
        for n in sizes.split(separator: ",").compactMap({ Int($0) }) {
            var perAgent: [Double] = [], allReachable: [Double] = []
            for r in 1...runs {
                options.progress("\(n) hosts, run \(r)/\(runs)")
                let lab = try Lab(hosts: n, name: "bd\(n)")
                defer { lab.destroy() }
                var started: [Int: Date] = [:]
                for h in 1...n {
                    started[h] = Date()
                    try lab.startAgent(h, wait: false)
                }
                var done: [Int: Double] = [:]
                let deadline = Date().addingTimeInterval(30)
                while done.count < n && Date() < deadline {
                    for h in 1...n where done[h] == nil {
                        guard let peers = try? await lab.request(h, "peers", as: PeersResult.self) else { continue }
                        if peers.peers.filter({ $0.state == "reachable" }).count == n - 1 {
                            done[h] = Date().timeIntervalSince(started[h]!)
                        }
                    }
                    try await Task.sleep(nanoseconds: 20_000_000)
                }
                perAgent += done.values
                allReachable.append(done.count == n ? done.values.max()! : .infinity)
            }
            let s = Stats(perAgent), all = Stats(allReachable)
            report.figures["hosts_\(n)_per_agent_median_s"] = s.median
            report.figures["hosts_\(n)_all_reachable_max_s"] = all.max
            rows.append(["_order": "hosts,per-agent median s,per-agent p95 s,all reachable (median run) s,all reachable (worst run) s",
                         "hosts": String(n), "per-agent median s": fmt(s.median), "per-agent p95 s": fmt(s.percentile(95)),
                         "all reachable (median run) s": fmt(all.median), "all reachable (worst run) s": fmt(all.max)])
            if n == 8 {
                report.goal("8 hosts: all peers reachable", target: "< 1.5 s", measured: "\(fmt(all.max)) s (worst of \(runs) runs)", met: all.max < 1.5)
            }
        }
        report.tables["time from agent start to all peers reachable"] = rows
        report.print(json: options.json)
    }
}
