import ArgumentParser
import Foundation
import LockstepLab

/// Every fault and bad input of issue 8, each on its own lab, with its measured outcome.
struct FaultsBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "faults", abstract: "Crashes, partitions, lossy links, clock jumps, avahi restarts and floods: how the group comes through.")

    @OptionGroup var options: BenchOptions
    @Option(help: "Scenarios, comma-separated (kill, partition, loss, clock, avahi, flood, member, remove, clone, amplification, replay); default all.") var only: String?

    func run() async throws {
        try options.check()
        var report = Report(benchmark: "faults")
        let wanted = only.map { Set($0.split(separator: ",").map(String.init)) }
        var rows: [[String: String]] = []
        var outcomes: [FaultOutcome] = []
        for scenario in Faults.all where wanted?.contains(scenario.name) ?? true {
            options.progress(scenario.name)
            // A scenario that cannot even run is a failed outcome, not the end of the report.
            let o: FaultOutcome
            do {
                o = try await scenario.run()
            } catch {
                var failed = FaultOutcome(fault: scenario.name)
                failed.check("the scenario runs", false, "\(error)")
                o = failed
            }
            outcomes.append(o)
            for c in o.checks {
                rows.append(["_order": "fault,check,result,measured", "fault": o.fault, "check": c.name, "result": c.passed ? "ok" : "FAILED", "measured": c.measured])
                report.goal("\(scenario.name): \(c.name)", target: "holds", measured: c.measured, met: c.passed)
            }
            for (k, v) in o.figures { report.figures["\(scenario.name).\(k)"] = v }
        }
        report.tables["faults"] = rows
        report.parameters["scenarios"] = outcomes.map(\.fault).joined(separator: "; ")
        report.print(json: options.json)
    }
}
