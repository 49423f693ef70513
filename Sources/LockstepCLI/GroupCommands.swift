import ArgumentParser
import Foundation
import LockstepClient
import LockstepPlayerProtocol

struct State: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "The group state: item, timeline anchor, rate, version vector, who issued the last command.")

    @OptionGroup var options: CommonOptions

    func run() async throws {
        let state: GroupStateView = try await options.withAgent { try await $0.request("state") }
        print(options.json ? try jsonText(state) : Self.render(state))
    }

    static func render(_ s: GroupStateView) -> String {
        var lines: [String] = []
        if let item = s.item {
            lines.append(Fields(itemFields(item)).render())
        } else {
            lines.append("the group plays nothing")
        }
        let vv = s.version.map { "\($0.name)=\($0.counter)" }.joined(separator: " ")
        var f: [(String, String)] = [("version", vv.isEmpty ? "-" : vv), ("fingerprint", s.fingerprint), ("lead now", Human.duration(ns: s.leadNs)), ("unacknowledged", String(s.pending))]
        if let log = s.log {
            var text = "\(log.unstable) not yet seen by all \(log.members) members, \(log.waiting) waiting"
            if log.late > 0 || log.forcedFolds > 0 { text += "; past the bounds: \(log.late) late, \(log.forcedFolds) folded early" }
            f.append(("history", text))
        }
        for c in (s.concurrent ?? []).suffix(3) { f.append(("crossed", Self.crossing(c))) }
        lines.append(Fields(f).render())
        let others = s.items.filter { $0.id != s.item?.id }
        if !others.isEmpty {
            lines.append("")
            lines.append(Table(headers: ["OTHER ITEM", "STATE", "POSITION", "RATE", "BY"], rows: others.map {
                [$0.id, $0.state.rawValue, $0.positionNowNs.map { Human.position(ns: $0) } ?? "?", Human.fixed($0.rate, 2), "\($0.origin.name) (\($0.origin.action))"]
            }).render())
        }
        return lines.joined(separator: "\n")
    }

    /// Commands that crossed, in the order they were applied: "seek by den, then pause by kitchen".
    static func crossing(_ c: ConcurrentView) -> String {
        c.commands.map { "\($0.origin.action) by \(Self.who($0.origin))" }.joined(separator: ", then ") + " (all applied)"
    }

    /// "h2", "mpv on h2", "mpv on h2 (here)".
    static func who(_ o: Origin) -> String {
        (o.player.map { "\($0) on " } ?? "") + o.name + (o.local ? " (here)" : "")
    }

    static func itemFields(_ item: ItemView) -> [(String, String)] {
        var f: [(String, String)] = [("item", item.id)]
        if let t = item.title { f.append(("title", t)) }
        f.append(("state", item.state.rawValue))
        f.append(("position", item.positionNowNs.map { Human.position(ns: $0) } ?? "unknown (waiting for the origin's clock)"))
        f.append(("rate", Human.fixed(item.rate, 2) + "×"))
        if let h = item.hostTimeNs {
            f.append(("anchor", "\(Human.position(ns: item.positionNs)) at host time \(h) ns (±\(Human.duration(ns: item.anchorBoundNs ?? 0)))"))
        }
        let o = item.origin
        f.append(("last command", "\(o.action) by \(Self.who(o))\(o.reason.map { ", \($0)" } ?? ""), #\(o.lamport)"))
        return f
    }
}

/// Shared by play, pause, seek, rate, stop, load: send a command, print the new state.
struct CommandRunner {
    static func run(_ options: CommonOptions, _ request: CommandRequest) async throws {
        let state: GroupStateView = try await options.withAgent { agent in
            do {
                return try await agent.request("command", request)
            } catch LockstepClient.Failure.rejected(let e) {
                printError(e.message)
                throw ExitCode(1)
            }
        }
        print(options.json ? try jsonText(state) : State.render(state))
    }
}

struct Play: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Play the group's item (everyone starts at the same instant).")
    @OptionGroup var options: CommonOptions
    @Option(help: "Playback rate, e.g. 1.5 (0.0625...16).") var rate: Double?
    func validate() throws { try Rate.check(rate) }
    func run() async throws { try await CommandRunner.run(options, CommandRequest(action: .play, rate: rate)) }
}

struct Pause: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Pause the group (everyone stops at the same position).")
    @OptionGroup var options: CommonOptions
    func run() async throws { try await CommandRunner.run(options, CommandRequest(action: .pause)) }
}

struct Seek: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Move the group to a position: 83.5, 1:23.5, 1:02:03, or relative +10 / -5.")
    @OptionGroup var options: CommonOptions
    @Argument(help: "The position (seconds or [h:]m:s), or +/- seconds from now.") var position: String

    func run() async throws {
        guard let parsed = Self.parse(position) else {
            printError("cannot read '\(position)' as a position within a year (83.5, 1:23.5, 1:02:03, +10, -5)")
            throw ExitCode(1)
        }
        var target = parsed.ns
        if parsed.relative {
            let state: GroupStateView = try await options.withAgent { try await $0.request("state") }
            guard let now = state.item?.positionNowNs else {
                printError("the group's position is not known; give an absolute position")
                throw ExitCode(1)
            }
            target = min(max(0, now + parsed.ns), PlayerLimits.positionNs.upperBound)
        }
        try await CommandRunner.run(options, CommandRequest(action: .seek, positionNs: target))
    }

    /// Seconds or [h:]m:s, optionally signed (relative).
    static func parse(_ text: String) -> (ns: Int64, relative: Bool)? {
        var t = Substring(text.trimmingCharacters(in: .whitespaces))
        var sign: Double = 1, relative = false
        if t.first == "+" || t.first == "-" {
            relative = true
            if t.first == "-" { sign = -1 }
            t = t.dropFirst()
        }
        if t.hasSuffix("s") { t = t.dropLast() }
        let parts = t.split(separator: ":", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count) else { return nil }
        var seconds = 0.0
        for (i, p) in parts.enumerated() {
            guard let v = Double(p), v >= 0, v.isFinite else { return nil }
            if i < parts.count - 1 && (v != v.rounded() || (i > 0 && v >= 60)) { return nil }
            seconds = seconds * 60 + v
        }
        // A position is at most a year of media (the agent refuses more).
        guard seconds * 1e9 <= Double(PlayerLimits.positionNs.upperBound) else { return nil }
        return (Int64((sign * seconds * 1e9).rounded()), relative)
    }
}

struct Rate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Change the group's playback rate (0.5, 1.5, 2…).")
    @OptionGroup var options: CommonOptions
    @Argument(help: "The rate (0.0625...16).") var rate: Double
    func validate() throws { try Self.check(rate) }
    func run() async throws { try await CommandRunner.run(options, CommandRequest(action: .rate, rate: rate)) }

    /// A rate the group accepts, or a usage error that says which.
    static func check(_ rate: Double?) throws {
        guard let rate, !PlayerLimits.rate.contains(rate) else { return }
        throw ValidationError("the rate must be within \(PlayerLimits.rate.lowerBound)...\(PlayerLimits.rate.upperBound), not \(rate)")
    }
}

struct Stop: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Stop: the group plays nothing.")
    @OptionGroup var options: CommonOptions
    func run() async throws { try await CommandRunner.run(options, CommandRequest(action: .stop)) }
}

struct Load: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Make an item (URL, path or custom identifier) the group's item.")
    @OptionGroup var options: CommonOptions
    @Argument(help: "The item's identity: a URL, a path, or a custom identifier shared by every device.") var item: String
    @Option(help: "A title shown to the others.") var title: String?
    func run() async throws { try await CommandRunner.run(options, CommandRequest(action: .load, item: item, title: title)) }
}

struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Stream changes: group state, peers and players, one line each (JSON lines with --json).")
    @OptionGroup var options: CommonOptions
    @Option(help: "Topics, comma-separated: state, peers, players, and clock and sync (each about once a second).") var topics = "state,peers,players"

    func run() async throws {
        let list = try topics.split(separator: ",").map { name in
            let text = String(name).trimmingCharacters(in: .whitespaces)
            guard let topic = Topic(rawValue: text) else { throw ValidationError("unknown topic '\(text)': state, peers, players, clock or sync") }
            return topic
        }
        try await options.withAgent { agent in
            let initial: GroupStateView = try await agent.request("subscribe", SubscribeRequest(topics: list))
            if !options.json { print(State.render(initial)) }
            for await event in agent.events {
                // Written straight to fd 1, unbuffered: a pipe reader sees each event at once.
                let line = (options.json ? String(decoding: event.json, as: UTF8.self) : Terminal.escaped(Self.render(event))) + "\n"
                FileHandle.standardOutput.write(Data(line.utf8))
            }
        }
        printError("the agent closed the connection")
        throw ExitCode(1)
    }

    static func render(_ event: LockstepClient.Event) -> String {
        let stamp = ISO8601DateFormatter().string(from: Date())
        switch event.name {
        case "state_changed":
            guard let e = try? event.decode(StateChangedEvent.self) else { return "\(stamp) state changed" }
            let o = e.origin
            let what = e.change == .current ? "group item → \(e.itemID ?? "none")" : "\(o.action) \(e.itemID ?? "")"
            let pos = e.state.item.flatMap { $0.positionNowNs }.map { " at \(Human.position(ns: $0))" } ?? ""
            let crossed = e.concurrent.map { "; crossed: " + State.crossing($0) } ?? ""
            return "\(stamp) \(what)\(pos) by \(State.who(o))\(o.reason.map { " (\($0))" } ?? "")\(crossed)"
        case "players_changed":
            guard let e = try? event.decode(PlayersChangedEvent.self) else { return "\(stamp) players changed" }
            let list = e.players.map { p in
                "\(p.participant.name)@\(p.participant.peerName) \(p.participant.readiness)" + (p.participant.suspensionReasons.isEmpty ? "" : " suspended (\(p.participant.suspensionReasons.joined(separator: ",")))")
            }
            return "\(stamp) players: " + (list.isEmpty ? "none" : list.joined(separator: "; "))
        case "peer_changed":
            guard let e = try? event.decode(PeerChangedEvent.self) else { return "\(stamp) peer changed" }
            return "\(stamp) peer \(e.peer.name) is \(e.peer.state)"
        case "clock_changed":
            guard let e = try? event.decode(ClockChangedEvent.self) else { return "\(stamp) clock" }
            let list = e.clock.peers.map { p in "\(p.name) \(Human.duration(ns: Int64(saturating: p.offsetNs))) ±\(Human.duration(ns: Int64(saturating: p.errorBoundNs)))" }
            return "\(stamp) clocks: " + (list.isEmpty ? "no peer measured" : list.joined(separator: "; "))
        case "sync_changed":
            guard let e = try? event.decode(PlayersChangedEvent.self) else { return "\(stamp) sync" }
            let list = e.players.map { p in
                "\(p.participant.name)@\(p.participant.peerName) " + (p.syncErrorNs.map { Human.duration(ns: $0) } ?? "–")
            }
            return "\(stamp) sync errors: " + (list.isEmpty ? "no players" : list.joined(separator: "; "))
        default:
            return "\(stamp) \(event.name): \(String(decoding: event.json, as: UTF8.self))"
        }
    }
}
