import ArgumentParser
import Foundation
import LockstepCore
import LockstepRefPlayer
import LockstepPlayerProtocol

/// `lockstep-refplayer`: the reference player (see `ReferencePlayer`).
@main
struct RefPlayerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lockstep-refplayer",
        abstract: "A precise, headless reference player for Lockstep: plays a virtual timeline and logs its true position.")

    @Option(help: "The agent's socket.") var socket: String = PlayerProtocol.defaultSocketPath()
    @Option(help: "Player name.") var name = "reference"
    @Option(help: "Item identity.") var item = "lockstep://reference/10-minutes"
    @Flag(help: "Play for this user alone, not with the group.") var solo = false
    @Option(name: .customLong("output-latency-ms"), help: "Output latency (ms).") var outputLatency: Double = 0
    @Option(name: .customLong("start-latency-ms"), help: "Start latency (ms).") var startLatency: Double = 20
    @Option(name: .customLong("start-jitter-us"), help: "Start and seek jitter, ± (µs).") var startJitter: Double = 100
    @Option(name: .customLong("load-ms"), help: "Time to load before ready (ms).") var load: Double = 200
    @Option(name: .customLong("seek-buffering-ms"), help: "Buffering after a seek correction (ms).") var seekBuffering: Double = 0
    @Option(name: .customLong("drift-ppm"), parsing: .unconditional, help: "Media clock drift (ppm).") var drift: Double = 0
    @Flag(name: .customLong("no-rate"), help: "Cannot change rate (corrections by seeks only).") var noRate = false
    @Option(name: .customLong("report-ms"), help: "Position report interval (ms).") var report: Double = 100
    @Option(help: "Log file for the true position (JSON lines; - for stdout).") var log: String = "-"
    @Option(help: "Seed for the modelled jitter.") var seed: UInt64 = 1

    func run() async throws {
        var c = ReferencePlayer.Configuration()
        c.name = name
        c.item = item
        c.share = solo ? .solo : .group
        c.outputLatencyNs = Nanos.from(seconds: outputLatency / 1e3)
        c.startLatencyNs = Nanos.from(seconds: startLatency / 1e3)
        c.startJitterNs = Nanos.from(seconds: startJitter / 1e6)
        c.loadDelayNs = Nanos.from(seconds: load / 1e3)
        c.seekBufferingNs = Nanos.from(seconds: seekBuffering / 1e3)
        c.driftPPM = drift
        c.canChangeRate = !noRate
        c.reportIntervalNs = Nanos.from(seconds: report / 1e3)
        c.seed = seed
        let handle: FileHandle
        if log == "-" {
            handle = .standardOutput
        } else {
            _ = FileManager.default.createFile(atPath: log, contents: nil)
            guard let h = FileHandle(forWritingAtPath: log) else { throw ValidationError("cannot write \(log)") }
            handle = h
        }
        let player = ReferencePlayer(configuration: c) { line in handle.write(Data((line + "\n").utf8)) }
        do {
            try await player.run(socketPath: socket)
        } catch {
            FileHandle.standardError.write(Data("lockstep-refplayer: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}
