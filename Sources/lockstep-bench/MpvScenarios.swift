import Foundation
import LockstepCore
import LockstepLab
import LockstepMPV
import LockstepPlayerProtocol

/// The users' script for `tools/bench mpv`, the same for every ``MpvSyncSystem``, and what the
/// probe's tracks say about it.
///
/// Timeline (hosts h1..h3, a user acting on one host at a time through that host's mpv IPC,
/// as pressing a key in mpv would; the sync system must carry it to the others):
///
///     start     h1 presses play (all paused at 0)                     then 6 s
///     cycle k   h(k+2) pauses, 3 s; h(k+3) plays, 5 s; h(k+1) seeks, 6 s   (k = 0..<cycles)
///     steady    nobody does anything                                  `steady` s
///     stall     h2's mpv is frozen (SIGSTOP) for `stall` s, then SIGCONT; watched for `watch` s
///
/// Spread windows open `settle` s after each command and close at the next one (steady: the
/// whole phase; stall: its last 5 s); "first second" is the second from 0.1 s after the last
/// player started moving after each play (the start itself). Reaction latency: from the host time the command was
/// written to the user's mpv to the instant another player started moving, stopped, or jumped,
/// found from that player's track (``PositionTrack/startedMoving(after:before:)``…).
struct MpvScript: Sendable {
    var cycles = 4
    var steady = 60.0
    var stall = 1.0
    var watch = 20.0
    var settle = 1.5
    /// Seek targets, used in turn.
    var seekTargets: [Double] = [120, 40, 250, 90, 330, 180]
    /// Within this distance of the others, a stalled player counts as recovered.
    var recoveredWithin = 0.050
    /// ... for at least this long.
    var recoveredFor = 3.0
}

/// One user command.
struct MpvAction: Sendable {
    enum Kind: String, Sendable, CaseIterable { case play, pause, seek }
    var kind: Kind
    /// Index of the host (0-based) whose user acted.
    var host: Int
    /// Host time the command was written to that host's mpv.
    var at: Int64
}

/// A window of the run over which the spread is measured.
struct MpvWindow: Sendable {
    var scenario: String
    var from: Int64
    var to: Int64
}

/// Everything recorded in one run.
struct MpvRecording: Sendable {
    var tracks: [PositionTrack]
    var actions: [MpvAction]
    var windows: [MpvWindow]
    var stalledHost: Int
    var stallStart: Int64
    var stallEnd: Int64
    var end: Int64
    /// The group's timeline as a player was told it, when the system records it.
    var timeline: [GStreamerPlayer.Told] = []

    /// Where the group's timeline was at host time `t` (nil before the first command or without one).
    func timelinePosition(at t: Int64) -> Double? {
        timeline.last { $0.hostTimeNs <= t }?.position(at: t)
    }
}

/// What one run measured, per system.
struct MpvResult: Sendable {
    /// Spreads (max − min of the three positions at each 10 ms instant), seconds, by scenario.
    var spreads: [String: [Double]] = [:]
    /// The same for each pair of hosts (|a − b|), by ``pairKey(_:_:_:)``: which player is off.
    var pairs: [String: [Double]] = [:]

    /// |position − the group's timeline| per host ("steady|h2"), when the timeline is known.
    var timelineErrors: [String: [Double]] = [:]

    /// "steady|h1-h2": hosts by 0-based index.
    static func pairKey(_ scenario: String, _ a: Int, _ b: Int) -> String { "\(scenario)|h\(a + 1)-h\(b + 1)" }
    /// Reaction latencies of the other hosts, seconds, by command.
    var reactions: [MpvAction.Kind: [Double]] = [:]
    /// Reaction latencies of the acting host's own mpv (the IPC round), seconds.
    var ownReactions: [MpvAction.Kind: [Double]] = [:]
    /// Other hosts that never reacted (within 3 s), by command.
    var missed: [MpvAction.Kind: Int] = [:]
    /// What each stall did (one per run).
    var stalls: [MpvStall] = []
    /// Probe round trips (seconds) and the share of readings kept.
    var roundTrips: [Double] = []
    var readingsKept = 1.0

    /// Pools another run's results into these.
    mutating func merge(_ other: MpvResult) {
        spreads.merge(other.spreads) { $0 + $1 }
        pairs.merge(other.pairs) { $0 + $1 }
        timelineErrors.merge(other.timelineErrors) { $0 + $1 }
        reactions.merge(other.reactions) { $0 + $1 }
        ownReactions.merge(other.ownReactions) { $0 + $1 }
        missed.merge(other.missed) { $0 + $1 }
        let total = Double(roundTrips.count + other.roundTrips.count)
        if total > 0 {
            readingsKept = (readingsKept * Double(roundTrips.count) + other.readingsKept * Double(other.roundTrips.count)) / total
        }
        roundTrips += other.roundTrips
        stalls += other.stalls
    }
}

/// One player stalled (SIGSTOP) and resumed, against the median of the others.
struct MpvStall: Sendable {
    /// Its offset 0.5 s after it resumed, seconds.
    var offsetAfter: Double?
    /// Time from SIGCONT until it stayed within `recoveredWithin` of the others for `recoveredFor`; nil: never.
    var recovery: Double?
    /// Its offset at the end of the watch.
    var offsetFinal: Double?
    /// Whether the players that were not stalled jumped during the watch (a rewind of the room).
    var othersJumped = false
}

enum MpvScenarios {
    static let names = ["first second", "start", "paused", "resume", "seek", "steady", "after stall"]

    /// Runs the script against `system` on `hosts` of `lab`, returns the recording.
    static func record(
        system: any MpvSyncSystem, lab: Lab, hosts: [Int], media: String, script: MpvScript,
        progress: @escaping @Sendable (String) -> Void
    ) async throws -> MpvRecording {
        let sockets = try await system.start(lab: lab, hosts: hosts, media: media, progress: progress)
        var stalledPid: pid_t = 0
        do {
            var recording = try await perform(sockets: sockets, script: script, progress: progress, stalledPid: &stalledPid)
            recording.timeline = system.timeline(lab: lab) ?? []
            let from = recording.actions.first.map { $0.at - 2 * Nanos.second } ?? recording.end
            recording.tracks += system.loggedTracks(lab: lab, from: from, to: recording.end)
            await system.stop(lab: lab, sockets: sockets)
            return recording
        } catch {
            if stalledPid > 1 { kill(stalledPid, SIGCONT) }
            await system.stop(lab: lab, sockets: sockets)
            throw error
        }
    }

    private static func perform(
        sockets: [String], script: MpvScript, progress: @escaping @Sendable (String) -> Void, stalledPid: inout pid_t
    ) async throws -> MpvRecording {
        var users: [MPVConnection] = [], watchers: [MPVConnection] = []
        for s in sockets {
            users.append(try await MPVConnection.connect(socketPath: s, timeout: 5))
            watchers.append(try await MPVConnection.connect(socketPath: s, timeout: 5))
        }
        let probe = PositionProbe(players: watchers, interval: 0.01)
        probe.start()
        var actions: [MpvAction] = [], windows: [MpvWindow] = []
        let settle = Nanos.from(seconds: script.settle)

        func act(_ kind: MpvAction.Kind, _ host: Int, target: Double = 0) async throws -> Int64 {
            let reply: MPVReply
            switch kind {
            case .play: reply = try await users[host].send(["set_property", "pause", false])
            case .pause: reply = try await users[host].send(["set_property", "pause", true])
            case .seek: reply = try await users[host].send(["seek", .double(target), "absolute"])
            }
            guard reply.succeeded else { throw MPVError.failed(command: kind.rawValue, error: reply.error) }
            actions.append(MpvAction(kind: kind, host: host, at: reply.sentAt))
            return reply.sentAt
        }
        func wait(_ seconds: Double) async throws { try await Task.sleep(nanoseconds: UInt64(seconds * 1e9)) }
        func window(_ scenario: String, from: Int64) { windows.append(MpvWindow(scenario: scenario, from: from, to: MonotonicClock.read())) }

        try await wait(1)
        progress("start: h1 plays")
        let started = try await act(.play, 0)
        try await wait(6)
        window("start", from: started + settle)
        for k in 0..<script.cycles {
            let (p, r, s) = ((k + 1) % 3, (k + 2) % 3, k % 3)
            let target = script.seekTargets[k % script.seekTargets.count]
            progress("cycle \(k + 1)/\(script.cycles): h\(p + 1) pauses, h\(r + 1) plays, h\(s + 1) seeks to \(Int(target)) s")
            let tp = try await act(.pause, p)
            try await wait(3)
            window("paused", from: tp + settle)
            let tr = try await act(.play, r)
            try await wait(5)
            window("resume", from: tr + settle)
            let ts = try await act(.seek, s, target: target)
            try await wait(6)
            window("seek", from: ts + settle)
        }
        progress("steady playback, \(Int(script.steady)) s")
        let steadyStart = MonotonicClock.read()
        try await wait(script.steady)
        window("steady", from: steadyStart)

        let stalled = 1
        guard let pid = try await users[stalled].get("pid").int, pid > 1 else { throw MPVError.failed(command: "get pid", error: "none") }
        stalledPid = pid_t(pid)
        progress("stall: h\(stalled + 1)'s mpv (pid \(pid)) stopped for \(script.stall) s, then watched \(Int(script.watch)) s")
        let stallStart = MonotonicClock.read()
        kill(stalledPid, SIGSTOP)
        try await wait(script.stall)
        kill(stalledPid, SIGCONT)
        let stallEnd = MonotonicClock.read()
        stalledPid = 0
        try await wait(script.watch)
        let end = MonotonicClock.read()
        windows.append(MpvWindow(scenario: "after stall", from: end - 5 * Nanos.second, to: end))

        let tracks = await probe.stop()
        for c in users + watchers { await c.close() }
        return MpvRecording(tracks: tracks, actions: actions, windows: windows, stalledHost: stalled,
                            stallStart: stallStart, stallEnd: stallEnd, end: end)
    }

    /// Spread at every `step` between `from` and `to`, where every track has an estimate.
    static func spreads(_ tracks: [PositionTrack], from: Int64, to: Int64, step: Int64 = 10 * Nanos.millisecond) -> [Double] {
        var out: [Double] = []
        var t = from
        while t < to {
            let positions = tracks.compactMap { $0.position(at: t) }
            if positions.count == tracks.count, let lo = positions.min(), let hi = positions.max() { out.append(hi - lo) }
            t += step
        }
        return out
    }

    static func analyse(_ r: MpvRecording, script: MpvScript) -> MpvResult {
        var result = MpvResult()
        var windows = r.windows
        // The start itself: the first second after every player is moving (after each play).
        for a in r.actions where a.kind == .play {
            let moving = r.tracks.map { $0.startedMoving(after: a.at, before: a.at + 3 * Nanos.second) }
            guard moving.allSatisfy({ $0 != nil }), let last = moving.compactMap({ $0 }).max() else { continue }
            let from = last + 100 * Nanos.millisecond
            windows.append(MpvWindow(scenario: "first second", from: from, to: from + Nanos.second))
        }
        for w in windows {
            result.spreads[w.scenario, default: []] += spreads(r.tracks, from: w.from, to: w.to)
            for (h, track) in r.tracks.enumerated() where !r.timeline.isEmpty {
                var t = w.from
                while t < w.to {
                    if let p = track.position(at: t), let expected = r.timelinePosition(at: t) {
                        result.timelineErrors["\(w.scenario)|h\(h + 1)", default: []].append(abs(p - expected))
                    }
                    t += 10 * Nanos.millisecond
                }
            }
            for i in r.tracks.indices {
                for j in r.tracks.indices where j > i {
                    result.pairs[MpvResult.pairKey(w.scenario, i, j), default: []] += spreads([r.tracks[i], r.tracks[j]], from: w.from, to: w.to)
                }
            }
        }
        for a in r.actions {
            let limit = a.at + 3 * Nanos.second
            for (h, track) in r.tracks.enumerated() {
                let instant: Int64? = switch a.kind {
                case .play: track.startedMoving(after: a.at, before: limit)
                case .pause: track.stoppedMoving(after: a.at, before: limit)
                case .seek: track.jumped(after: a.at, before: limit)
                }
                guard let instant else {
                    if h != a.host { result.missed[a.kind, default: 0] += 1 }
                    continue
                }
                let latency = Double(instant - a.at) / 1e9
                if h == a.host { result.ownReactions[a.kind, default: []].append(latency) } else { result.reactions[a.kind, default: []].append(latency) }
            }
        }
        // The stalled player against the median of the others.
        let s = r.stalledHost
        func offset(at t: Int64) -> Double? {
            guard let mine = r.tracks[s].position(at: t) else { return nil }
            let others = r.tracks.indices.filter { $0 != s }.compactMap { r.tracks[$0].position(at: t) }.sorted()
            guard others.count == r.tracks.count - 1, !others.isEmpty else { return nil }
            let median = others.count % 2 == 1 ? others[others.count / 2] : (others[others.count / 2 - 1] + others[others.count / 2]) / 2
            return mine - median
        }
        var stall = MpvStall()
        stall.offsetAfter = offset(at: r.stallEnd + 500 * Nanos.millisecond)
        let step = 10 * Nanos.millisecond, hold = Nanos.from(seconds: script.recoveredFor)
        var t = r.stallEnd, inSince: Int64?
        while t < r.end {
            if let d = offset(at: t), abs(d) <= script.recoveredWithin {
                if inSince == nil { inSince = t }
                if t - inSince! >= hold { break }
            } else {
                inSince = nil
            }
            t += step
        }
        if let inSince, t - inSince >= hold { stall.recovery = Double(inSince - r.stallEnd) / 1e9 }
        stall.offsetFinal = offset(at: r.end - 200 * Nanos.millisecond)
        stall.othersJumped = r.tracks.indices.filter { $0 != s }.contains {
            r.tracks[$0].jumped(after: r.stallStart, before: r.end, minimum: 0.3) != nil
        }
        result.stalls = [stall]
        let all = r.tracks.flatMap(\.samples)
        result.roundTrips = all.map { Double($0.roundTrip) / 1e9 }
        let kept = r.tracks.map(\.points.count).reduce(0, +)
        result.readingsKept = all.isEmpty ? 0 : Double(kept) / Double(all.count)
        return result
    }

    /// Writes the recording as CSV: `hN.csv` (sent_ns,received_ns,position) per host and
    /// `actions.csv` (kind,host,at_ns), `windows.csv` (scenario,from_ns,to_ns).
    static func dump(_ r: MpvRecording, to directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for (h, track) in r.tracks.enumerated() {
            var text = "sent_ns,received_ns,position\n"
            for s in track.samples { text += "\(s.sentAt),\(s.receivedAt),\(s.position.map { String($0) } ?? "")\n" }
            try text.write(toFile: "\(directory)/h\(h + 1).csv", atomically: true, encoding: .utf8)
        }
        var actions = "kind,host,at_ns\n"
        for a in r.actions { actions += "\(a.kind.rawValue),h\(a.host + 1),\(a.at)\n" }
        actions += "stall-start,h\(r.stalledHost + 1),\(r.stallStart)\nstall-end,h\(r.stalledHost + 1),\(r.stallEnd)\n"
        try actions.write(toFile: directory + "/actions.csv", atomically: true, encoding: .utf8)
        var windows = "scenario,from_ns,to_ns\n"
        for w in r.windows { windows += "\(w.scenario),\(w.from),\(w.to)\n" }
        try windows.write(toFile: directory + "/windows.csv", atomically: true, encoding: .utf8)
    }
}
