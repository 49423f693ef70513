import ArgumentParser
import Foundation
import LockstepCore
import LockstepPlayerProtocol

/// `lockstep-bench estimator`: what one clock sample costs the agent. Every agent feeds every
/// peer's samples (4–40 a second each) to its ``ClockEstimator``, so `onSample` must stay cheap at
/// a full window. Synthetic samples (no lab, no root): a 100 ppm skew and either a quiet link
/// (kernel-timestamp-like, a few µs of noise) or 5 ms ± 1 ms of jitter each way.
struct EstimatorBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "estimator",
        abstract: "CPU cost of one clock sample (ClockEstimator.onSample) and of one estimate, by window size.")

    @Flag(help: "Print one JSON object instead of a table.")
    var json = false

    @Option(help: "Timed samples per window size and link.")
    var samples = 5_000

    func run() throws {
        var report = Report(benchmark: "estimator")
        report.parameters = ["samples": String(samples), "skew_ppm": "100", "interval_ms": "100"]
        var rows: [[String: String]] = []
        let order = "link,window,onSample p50 us,onSample p99 us,estimate p50 us"
        for (link, noise) in [("quiet", 3_000.0), ("jitter 5 +- 1 ms", 2_000_000.0)] {
            for window in [64, 256, 512] {
                var estimator = ClockEstimator(configuration: .init(capacity: window, maxSampleAge: .max))
                var generator = SystemRandomNumberGenerator()
                var t: Int64 = 1_000_000_000
                func next() -> ClockSample {
                    t += 100_000_000
                    let peer = { (local: Int64) in local + 5_000_000_000 + Int64(Double(local) * 100e-6) }
                    let out = Int64(Double.random(in: 0..<noise, using: &generator))
                    let back = Int64(Double.random(in: 0..<noise, using: &generator))
                    let t2 = peer(t + 20_000 + out)
                    let t3 = t2 + 30_000
                    return ClockSample(t1: LocalTime(ns: t), t2: PeerTime(ns: t2), t3: PeerTime(ns: t3), t4: LocalTime(ns: t + 70_000 + out + back))
                }
                for _ in 0..<window { _ = estimator.onSample(next()) }
                var costs: [Double] = []
                costs.reserveCapacity(samples)
                var estimates: [Double] = []
                estimates.reserveCapacity(samples)
                for _ in 0..<samples {
                    let s = next()
                    let start = MonotonicClock.read()
                    _ = estimator.onSample(s)
                    let middle = MonotonicClock.read()
                    _ = estimator.estimate(at: s.t4)
                    let end = MonotonicClock.read()
                    costs.append(Double(middle - start) / 1_000)
                    estimates.append(Double(end - middle) / 1_000)
                }
                costs.sort()
                estimates.sort()
                let p50 = costs[costs.count / 2], p99 = costs[costs.count * 99 / 100], e50 = estimates[estimates.count / 2]
                rows.append(["_order": order, "link": link, "window": String(window), "onSample p50 us": fmt(p50, 1), "onSample p99 us": fmt(p99, 1), "estimate p50 us": fmt(e50, 2)])
                let key = "\(link == "quiet" ? "quiet" : "jitter")_\(window)"
                report.figures["\(key)_on_sample_p50_us"] = p50
                report.figures["\(key)_on_sample_p99_us"] = p99
                report.figures["\(key)_estimate_p50_us"] = e50
                if window == 512 {
                    // 8 peers at the fastest steady rate (10 a second), every window full.
                    let share = 80 * p50 / 1e6 * 100
                    report.figures["\(key)_cpu_share_8_peers_percent"] = share
                    report.goal("\(link): 8 peers at 10 samples a second, full windows", target: "<= 1 % of one core", measured: "\(fmt(share, 2)) %", met: share <= 1)
                }
            }
        }
        report.tables["cost per call (one thread, release build)"] = rows
        report.notes.append("CPU share = 80 onSample calls a second x their p50; estimates are read far less often (players' and group conversions)")
        report.print(json: json)
    }
}
