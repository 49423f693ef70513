import ArgumentParser
import Foundation
import LockstepCore
import LockstepSimKit

/// `lockstep-bench scenarios`: the clock estimator's numbered scenarios (``ClockScenarioCheck``)
/// pooled over many seeds, each judged against the figures of the brief. Simulated links and
/// clocks (no lab, no root): minutes of simulated time per seed, seconds of CPU in release.
struct ScenariosBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scenarios",
        abstract: "The clock scenarios over many seeds: error, bound coverage and tightness, time to usable (simulated, no root).")

    @Flag(help: "Print one JSON object instead of a table.")
    var json = false

    @Option(help: "Seeds per scenario (1…1000).")
    var seeds: UInt64 = 10

    @Option(help: "Only the scenarios whose id starts with this (e.g. 010).")
    var only: String?

    func validate() throws {
        guard (1...1_000).contains(seeds) else { throw ValidationError("--seeds must be within 1…1000") }
    }

    func run() throws {
        let checks = ClockScenarioCheck.catalog.filter { only.map($0.id.hasPrefix) ?? true }.map { check in
            var c = check
            c.seeds = 1...seeds
            return c
        }
        guard !checks.isEmpty else { throw ValidationError("no scenario id starts with \(only ?? "")") }
        var report = Report(benchmark: "scenarios")
        report.parameters = ["seeds": String(seeds), "duration_s": "120", "measured_from_s": "5", "observed_every_ms": "10"]
        let order = "scenario,link,n,p99 us,max us,coverage %,hard %,bound median us,bound/p99,usable ms,verdict"
        var rows: [[String: String]] = []
        for check in checks {
            FileHandle.standardError.write(Data("  \(check.id)…\n".utf8))
            let o = check.run()
            let s = o.stats
            let tightness = s.tightness(floorNs: ClockScenario.tightnessFloorNs)
            rows.append([
                "_order": order, "scenario": check.id, "link": check.title, "n": String(s.count),
                "p99 us": fmt(s.p99 / 1e3, 2), "max us": fmt(s.max / 1e3, 2), "coverage %": fmt(s.coverage * 100, 2),
                "hard %": fmt(s.hardCoverage * 100, 1), "bound median us": fmt(s.medianBound / 1e3, 2), "bound/p99": fmt(tightness, 2),
                "usable ms": fmt(Double(o.slowestUsableNs) / 1e6, 0), "verdict": o.passed ? "met" : "NOT MET: " + o.failures.joined(separator: ", "),
            ])
            let key = check.id.replacingOccurrences(of: "-", with: "_")
            report.figures["\(key)_p99_us"] = s.p99 / 1e3
            report.figures["\(key)_coverage_percent"] = s.coverage * 100
            report.figures["\(key)_hard_coverage_percent"] = s.hardCoverage * 100
            report.figures["\(key)_bound_over_p99"] = tightness
            report.figures["\(key)_usable_ms"] = Double(o.slowestUsableNs) / 1e6
            var target = "coverage >= \(fmt(check.coverageAtLeast * 100, 0)) %, bound/p99 <= \(fmt(check.tightnessAtMost, 0))"
            if let p99 = check.p99AtMostNs { target = "p99 <= \(fmt(p99 / 1e3, 0)) us, " + target }
            if let usable = check.usableWithinNs { target += ", usable within \(usable / Nanos.millisecond) ms" }
            report.goal(
                "\(check.id) (\(check.title))", target: target,
                measured: "p99 \(fmt(s.p99 / 1e3, 2)) us, coverage \(fmt(s.coverage * 100, 2)) %, bound/p99 \(fmt(tightness, 2)), usable \(fmt(Double(o.slowestUsableNs) / 1e6, 0)) ms",
                met: o.passed)
        }
        report.tables["pooled over \(seeds) seeds, 120 s each"] = rows
        report.notes.append("errors against the simulated truth every 10 ms from 5 s on; bound/p99 counts errors below 0.2 us as 0.2 us; usable = the latest any seed was still >= 1 ms off")
        report.print(json: json)
    }
}
