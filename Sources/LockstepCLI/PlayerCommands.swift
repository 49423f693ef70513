import ArgumentParser
import Foundation
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

/// `lockstep latency`: the output latencies the agent keeps per player name.
struct Latency: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Output latencies kept per player name (a TV, a Bluetooth speaker), applied whenever that player connects without giving its own.",
        subcommands: [List.self, Keep.self, Forget.self], defaultSubcommand: List.self)

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Every kept output latency.")
        @OptionGroup var options: CommonOptions

        func run() async throws {
            let r: LatencyListResult = try await options.withAgent { try await $0.request("latency_list") }
            print(options.json ? try jsonText(r) : Latency.render(r))
        }
    }

    struct Keep: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "set", abstract: "Keep a player's output latency: lockstep latency set \"living room\" 80ms.")
        @OptionGroup var options: CommonOptions
        @Argument(help: "The player's name, as it says hello (lockstep players, PLAYER).") var name: String
        @Argument(help: "The latency: 80ms, 1.5s, 250us, or a number of milliseconds (0 to 10 s).") var latency: String

        func run() async throws {
            guard let ns = Latency.parse(latency) else {
                printError("not a latency: '\(Terminal.escaped(latency))' (e.g. 80ms, 0.25s, 300us)")
                throw ExitCode(2)
            }
            try await Latency.send(options, LatencySetRequest(name: name, outputLatencyNs: ns))
        }
    }

    struct Forget: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Forget a player's kept output latency.")
        @OptionGroup var options: CommonOptions
        @Argument(help: "The player's name.") var name: String

        func run() async throws {
            try await Latency.send(options, LatencySetRequest(name: name, outputLatencyNs: nil))
        }
    }

    static func send(_ options: CommonOptions, _ request: LatencySetRequest) async throws {
        let r: LatencyListResult = try await options.withAgent { agent in
            do {
                return try await agent.request("latency_set", request)
            } catch LockstepClient.Failure.rejected(let e) {
                printError(e.message)
                throw ExitCode(1)
            }
        }
        print(options.json ? try jsonText(r) : render(r))
    }

    /// `80ms`, `1.5s`, `250us`, `80` (milliseconds): nanoseconds, or nil.
    static func parse(_ text: String) -> Int64? {
        let units: [(String, Double)] = [("ms", 1e6), ("us", 1e3), ("µs", 1e3), ("ns", 1), ("s", 1e9)]
        let t = text.trimmingCharacters(in: .whitespaces)
        let (digits, scale) = units.first { t.hasSuffix($0.0) }.map { (String(t.dropLast($0.0.count)), $0.1) } ?? (t, 1e6)
        guard let value = Double(digits), value.isFinite, value >= 0 else { return nil }
        let ns = (value * scale).rounded()
        guard ns <= Double(PlayerLimits.latencyNs.upperBound) else { return nil }
        return Int64(ns)
    }

    static func render(_ r: LatencyListResult) -> String {
        if r.latencies.isEmpty { return "no output latencies kept" }
        return Table(headers: ["PLAYER", "OUTPUT LATENCY"], rows: r.latencies.map { [$0.name, Human.duration(ns: $0.outputLatencyNs)] }).render()
    }
}
