import ArgumentParser
import LockstepPlayerProtocol

struct Clock: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Every peer's clock: offset, error bound, delay, skew, samples, age of the last sample, mesh closure.")

    @OptionGroup var options: CommonOptions

    func run() async throws {
        let result: ClockResult = try await options.withAgent { try await $0.request("clock") }
        print(options.json ? try jsonText(result) : Self.render(result))
    }

    static func render(_ r: ClockResult) -> String {
        if r.peers.isEmpty { return "no reachable peers" }
        return Table(
            headers: ["NAME", "OFFSET", "± BOUND", "HARD", "DELAY", "SKEW", "SAMPLES", "LAST", "STAMPS", "SOURCE", "CLOSURE"],
            rows: r.peers.map { p in
                [
                    p.name, Human.duration(ns: Int64(saturating: p.offsetNs.rounded())), Human.duration(ns: Int64(saturating: p.errorBoundNs.rounded())),
                    Human.duration(ns: Int64(saturating: p.hardBoundNs.rounded())), Human.duration(ns: p.delayNs),
                    Human.fixed(p.skewPPM, 2) + "ppm", String(p.samples), Human.duration(ns: p.lastSampleAgeNs) + " ago", Self.stamps(p),
                    p.source + (p.trusted ? "" : " (untrusted)") + (p.delayStepNs.map { " (delay step +" + Human.duration(ns: $0) + ")" } ?? ""),
                    p.closureErrorNs.map { Human.duration(ns: Int64(saturating: $0.rounded())) + " over \(p.paths)" } ?? "-",
                ]
            }
        ).render()
    }

    /// `kernel` or `agent`, and what went wrong with the peer's send times, if anything.
    static func stamps(_ p: ClockInfo) -> String {
        var problems: [String] = []
        if p.followUpsMissed > 0 { problems.append("\(p.followUpsMissed) follow-ups late") }
        if let n = p.unmatchedResults, n > 0 { problems.append("\(n) results unmatched") }
        if p.stampsImplausible > 0 { problems.append("\(p.stampsImplausible) refused") }
        return problems.isEmpty ? p.sendStamps : p.sendStamps + " (" + problems.joined(separator: ", ") + ")"
    }
}
