import ArgumentParser
import LockstepClient
import LockstepPlayerProtocol

struct Players: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Every player on every peer: item, readiness, suspensions, latencies, sync error (local players).")

    @OptionGroup var options: CommonOptions

    func run() async throws {
        let result: PlayersResult = try await options.withAgent { try await $0.request("players") }
        print(options.json ? try jsonText(result) : Self.render(result))
    }

    static func render(_ r: PlayersResult) -> String {
        if r.players.isEmpty { return "no players" }
        return Table(
            headers: ["PEER", "ID", "PLAYER", "ITEM", "STATE", "SUSPENDED", "OUTPUT", "START", "SYNC ERROR"],
            rows: r.players.map { p in
                let v = p.participant
                return [
                    v.peerName + (v.local ? " (here)" : ""), String(v.playerID), v.name, (p.item ?? "-") + (p.solo ? " (solo)" : ""),
                    v.readiness.rawValue, v.suspensionReasons.isEmpty ? "-" : v.suspensionReasons.joined(separator: ","),
                    Human.duration(ns: p.outputLatencyNs), Human.duration(ns: p.startLatencyNs), p.syncErrorNs.map { Human.duration(ns: $0) } ?? "-",
                ]
            }
        ).render()
    }
}

struct Suspend: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Suspend a local player (for testing): it leaves group playback until resumed.")
    @OptionGroup var options: CommonOptions
    @Option(help: "The player's id on this agent (default: the only one).") var player: UInt32?
    @Argument(help: "The reason: stall-recovery, interruption, user-changing-time, interstitial, user-action-required, or your own.") var reason = "interruption"

    func run() async throws {
        let r: BeginSuspensionResult = try await options.withAgent { agent in
            do {
                return try await agent.request("suspend_player", SuspendPlayerRequest(playerID: player, reason: reason))
            } catch LockstepClient.Failure.rejected(let e) {
                printError(e.message)
                throw ExitCode(1)
            }
        }
        print(options.json ? try jsonText(r) : Terminal.escaped("suspended (suspension \(r.suspensionID), \(reason))"))
    }
}

struct Resume: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "End a local player's suspension; with --at, the whole group moves to that position.")
    @OptionGroup var options: CommonOptions
    @Option(help: "The player's id on this agent (default: the only one).") var player: UInt32?
    @Option(help: "Which suspension (default: the latest).") var suspension: UInt32?
    @Option(help: "Propose a new position to the group (seconds or [h:]m:s).") var at: String?

    func run() async throws {
        var position: Int64?
        if let at {
            guard let p = Seek.parse(at), !p.relative else {
                printError("cannot read '\(at)' as an absolute position")
                throw ExitCode(1)
            }
            position = p.ns
        }
        let _: EmptyResult = try await options.withAgent { agent in
            do {
                return try await agent.request("resume_player", ResumePlayerRequest(playerID: player, suspensionID: suspension, proposePositionNs: position))
            } catch LockstepClient.Failure.rejected(let e) {
                printError(e.message)
                throw ExitCode(1)
            }
        }
        print(options.json ? "{}" : "resumed")
    }
}
