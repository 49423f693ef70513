import ArgumentParser
import Foundation
import LockstepLab

/// `lockstep-bench NAME [--json]`: Lockstep's benchmarks, each on the network lab. Run through
/// `tools/bench`, which builds in release mode first.
@main
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lockstep-bench",
        abstract: "Lockstep's benchmarks (need root: they build a network lab).",
        subcommands: [DiscoveryBench.self, MergeBench.self, PlayersBench.self, MpvBench.self, GStreamerBench.self, FaultsBench.self, FloodCommand.self, MemberCommand.self, AmplifyCommand.self, ClockBench.self, EstimatorBench.self, EnvelopeBench.self, LineHeadBench.self, ScenariosBench.self, ScaleBench.self, SimScaleBench.self, WebBench.self])
}

/// Options every benchmark takes.
struct BenchOptions: ParsableArguments {
    @Flag(help: "Print one JSON object: parameters, figures, and each goal's target, measured value and verdict.")
    var json = false

    func check() throws {
        guard getuid() == 0 else {
            FileHandle.standardError.write(Data("lockstep-bench: benchmarks build network namespaces and need root\n".utf8))
            throw ExitCode(1)
        }
    }

    func progress(_ text: String) {
        FileHandle.standardError.write(Data("  \(text)\n".utf8))
    }
}
