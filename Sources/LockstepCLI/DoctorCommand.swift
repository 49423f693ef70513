import ArgumentParser
import Foundation
import LockstepClient
import LockstepPlayerProtocol

/// `lockstep doctor`: why playback is off. Gathers what the agent already tells its monitors
/// (`status`, `peers`, `clock`, `players`, and `status` again a moment later), what avahi sees
/// on the network and this machine's interfaces; ``Diagnosis`` judges it. Exit status 1 when a
/// check fails.
struct Doctor: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Say why playback is off: agent, avahi-daemon, multicast, UDP port, peers, key epochs, clocks, players; each failure with its fix.",
        discussion: "Checks in that order; each later check needs the earlier ones. Exit status 1 when a check fails. --json prints the checks for scripts.")

    @OptionGroup var options: CommonOptions

    @Option(name: .customLong("clock-bound-ms"), help: "A peer clock error bound above this fails (0.001...10000 ms).")
    var clockBoundMs: Double = 2

    func validate() throws {
        guard (0.001...10_000).contains(clockBoundMs) else { throw ValidationError("--clock-bound-ms must be within 0.001...10000") }
    }

    func run() async throws {
        var limits = Diagnosis.Limits()
        limits.clockBoundNs = clockBoundMs * 1e6
        let report = Diagnosis(limits: limits).report(await Self.observe(socketPath: options.socketPath))
        print(options.json ? try jsonText(report) : report.render())
        if !report.healthy { throw ExitCode(1) }
    }

    /// Asks the agent, avahi and the kernel. Never throws: whatever cannot be had is recorded
    /// as such for the diagnosis.
    static func observe(socketPath: String) async -> DoctorObservations {
        let interfaces = NetworkInterface.all()
        struct First: Sendable {
            var status: AgentStatus
            var peers: PeersResult
            var clock: ClockResult
            var players: PlayersResult
        }
        let contact: DoctorObservations.AgentContact
        var first: First?
        do {
            first = try await LockstepClient.withConnection(socketPath: socketPath) { agent in
                First(status: try await agent.request("status"), peers: try await agent.request("peers"), clock: try await agent.request("clock"), players: try await agent.request("players"))
            }
            contact = .answered(first!.status)
        } catch LockstepClient.Failure.agentNotRunning {
            contact = .notRunning(socketExists: FileManager.default.fileExists(atPath: socketPath))
        } catch LockstepClient.Failure.permissionDenied {
            contact = .permissionDenied
        } catch {
            contact = .failed("\(error)")
        }
        let started = Date()
        // avahi-browse blocks for a second or two: off the cooperative threads.
        let browse = await Task.detached { MDNSBrowser.browse() }.value
        var later: AgentStatus?
        if first != nil {
            later = try? await LockstepClient.withConnection(socketPath: socketPath) { try await $0.request("status") }
        }
        return DoctorObservations(
            socketPath: socketPath, agent: contact, statusLater: later, seconds: Date().timeIntervalSince(started),
            peers: first?.peers, clock: first?.clock, players: first?.players, browse: browse, interfaces: interfaces)
    }
}
