import Foundation
import LockstepLab
import LockstepPlayerProtocol

/// The player phase of `lockstep-bench scale`: how close together a group's reference players
/// start, and how long a command takes to reach every one of them, at one group size.
///
/// A reference player joins every host's agent (after the idle and clock measurements, so none
/// was connected then), all load the one item, and the bench issues rounds of play, seek and
/// pause, each command at the next host in turn. Every player logs each timeline it receives:
/// when it arrived, when it took effect and which command set it (the origin's peer id and
/// command number, which the issuing agent's reply names too). All lab hosts share
/// CLOCK_MONOTONIC, so the players' host times and the bench's compare directly.
struct ScalePlays {
    /// Per play: the spread (max − min) of the instants at which the players start, µs.
    var startSpread: Stats
    /// Per command: from just before the bench sent it to the issuing agent until the last
    /// player received the timeline it set, ms.
    var reach: Stats
    /// While the group plays and nobody commands: CPU per agent (% of one core), its player
    /// reporting its position ten times a second; and per player.
    var playingAgentCPU: Stats
    var playingPlayerCPU: Stats
    /// How long the group plays for those figures, after its start has settled.
    static let playingSeconds = 10.0
    /// Commands issued, and those some player never received (not in ``reach``).
    var commands: Int
    var missed: Int
    /// Player starts more than ``lateAfter`` after the play's instant (told too late to be on
    /// time), of all the starts measured.
    var lateStarts: Int
    var starts: Int
    /// A start later than this after its play's instant is late: beyond the players' modelled
    /// jitter (±100 µs) and the agents' clock error (µs).
    static let lateAfter: Int64 = 200_000

    /// One command as issued: which it was, where, when it left the bench, and its instant
    /// (the issuing agent's reply: host ns).
    private struct Issued {
        var peerID: String
        var lamport: UInt64
        var action: CommandRequest.Action
        var host: Int
        var sent: Int64
        var anchor: Int64?
    }

    /// Runs `plays` rounds on `lab` (its agents, `agents` by host, running and reachable), then
    /// lets the group play ``playingSeconds``; players stay connected.
    static func measure(_ lab: Lab, agents: [Int32], plays: Int, progress: (String) -> Void) async throws -> ScalePlays {
        let n = lab.hosts
        progress("  starting \(n) reference players")
        let group = try await PlayingGroup(lab: lab, readyTimeout: 30 + Double(n))
        // Each command changes the state, so every player gets a new timeline: a play from a
        // pause, a seek while playing, a pause while playing; each waits before the next.
        var issued: [Issued] = []
        var next = 0
        for i in 0..<plays {
            progress("  play \(i + 1)/\(plays)")
            let round: [(CommandRequest, pause: UInt64)] = [
                (.init(action: .play), 700_000_000),
                (.init(action: .seek, positionNs: Int64(i % 80 + 1) * 7_000_000_000), 500_000_000),
                (.init(action: .pause), 400_000_000),
            ]
            for (command, pause) in round {
                let host = next % n + 1
                next += 1
                let (sent, state) = try await issue(command, at: host, in: lab)
                if let origin = state.item?.origin {
                    issued.append(Issued(peerID: origin.peerID, lamport: origin.lamport, action: command.action, host: host, sent: sent, anchor: state.item?.hostTimeNs))
                }
                try await Task.sleep(nanoseconds: pause)
            }
        }
        let traces = try group.traces()
        // A command whose reply named no item is missed as well.
        var spreads: [Double] = [], reaches: [Double] = [], missed = next - issued.count, late = 0, starts = 0
        for c in issued {
            let got = traces.compactMap { $0.instruction(from: c.peerID, lamport: c.lamport) }
            guard got.count == n, let last = got.map(\.received).max() else {
                missed += 1
                progress("  \(c.action.rawValue) at h\(c.host): \(got.count) of \(n) players received it")
                continue
            }
            let reach = Double(last - c.sent) / 1e6
            reaches.append(reach)
            var line = "  \(c.action.rawValue) at h\(c.host): every player had it after \(fmt(reach, 2)) ms"
            let begun = got.filter { $0.rate > 0 }.map(\.from)
            if c.action == .play, begun.count == n, let lo = begun.min(), let hi = begun.max() {
                spreads.append(Double(hi - lo) / 1e3)
                starts += n
                let lateHere = c.anchor.map { anchor in begun.filter { $0 - anchor > lateAfter }.count } ?? 0
                late += lateHere
                line += "; starts spread \(fmt(Double(hi - lo) / 1e3, 1)) µs, \(lateHere) late"
            }
            progress(line)
        }
        // After the rounds, so that these commands are not among those measured above.
        progress("  playing \(Int(playingSeconds)) s")
        let players = try (1...n).map { try lab.pid(of: "player", on: $0) }
        _ = try await issue(.init(action: .play), at: 1, in: lab)
        try await Task.sleep(nanoseconds: 2_000_000_000)
        let before = (agents + players).map { CPUTime(pid: $0) }, t0 = Date()
        try await Task.sleep(nanoseconds: UInt64(playingSeconds * 1e9))
        let after = (agents + players).map { CPUTime(pid: $0) }, dt = Date().timeIntervalSince(t0)
        let used = zip(before, after).map { $1.seconds(since: $0) / dt * 100 }
        _ = try await issue(.init(action: .pause), at: 1, in: lab)
        return ScalePlays(
            startSpread: Stats(spreads), reach: Stats(reaches), playingAgentCPU: Stats(Array(used.prefix(agents.count))),
            playingPlayerCPU: Stats(Array(used.dropFirst(agents.count))), commands: next, missed: missed, lateStarts: late, starts: starts)
    }

    /// Sends `command` to the agent on `host`: when it left the bench (host ns), and the state
    /// the agent answered.
    private static func issue(_ command: CommandRequest, at host: Int, in lab: Lab) async throws -> (sent: Int64, state: GroupStateView) {
        // Connected before the clock starts: connecting is not what is timed.
        let client = try await PersistentClient(socketPath: lab.socket(host))
        defer { client.close() }
        let sent = MonotonicClock.read()
        let state: GroupStateView = try await client.request("command", command)
        return (sent, state)
    }
}
