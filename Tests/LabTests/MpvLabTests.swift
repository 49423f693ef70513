import Foundation
import LockstepCore
import LockstepLab
import LockstepMPV
import Testing
import LockstepPlayerProtocol

/// mpv in lab hosts, driven and probed from the main namespace through sockets under the
/// lab's directory; and `lockstep mpv` bridging them to their agents, in step.
@Suite("Lab: mpv", .enabled(if: Lab.isEnabled, "needs root and LOCKSTEP_LAB=1"), .serialized)
struct MpvLabTests {
    /// The truth here is when each unpause was written; mpv's own reaction to it is part of what
    /// the probe sees, and varied by up to 0.6 ms in 12 runs on this 2-core machine, hence 2 ms.
    /// In a loaded CI run one mpv was scheduled 4.3 ms late, so, as in `PositionProbeTests`
    /// (which holds the probe itself to 1 ms), a trial is repeated up to 3 times.
    @Test("headless mpv in three hosts: commands reach each, and the probe sees head starts of 100 and 250 ms to within 2 ms")
    func threeHosts() async throws {
        let media = try TestMedia.tone(seconds: 60)
        let lab = try Lab(hosts: 3, avahi: false, name: "mpv")
        defer { lab.destroy() }
        var players: [MPVConnection] = [], watchers: [MPVConnection] = []
        for h in 1...3 {
            var options = MPVOptions(socketPath: lab.hostDirectory(h) + "/mpv.sock", media: media)
            options.paused = true
            try lab.spawn(h, "mpv", options.arguments)
            let c = try await MPVConnection.connect(socketPath: options.socketPath, timeout: 10)
            let loaded = await waitUntil(timeout: 10) { (try? await c.get("duration").double) != nil }
            #expect(loaded != nil, "h\(h) loaded the media")
            players.append(c)
            watchers.append(try await MPVConnection.connect(socketPath: options.socketPath))
        }
        var trials: [(Double, Double)] = []
        for _ in 0..<3 {
            let offsets = try await Self.headStartTrial(players: players, watchers: watchers)
            trials.append(offsets)
            if abs(offsets.0) < 0.002, abs(offsets.1) < 0.002 { break }
            for c in players {  // back to paused at 0 for the next trial
                _ = try await c.send(["set_property", "pause", true])
                _ = try await c.command("seek", 0, "absolute+exact")
            }
            try await Task.sleep(nanoseconds: 500_000_000)
        }
        let (off2, off3) = try #require(trials.last)
        let tried = trials.map { String(format: "(%.3f, %.3f) ms", $0.0 * 1e3, $0.1 * 1e3) }
        #expect(abs(off2) < 0.002, "h2 off its written head start, \(trials.count) tries: \(tried)")
        #expect(abs(off3) < 0.002, "h3 off its written head start, \(trials.count) tries: \(tried)")
        for c in players { _ = try? await c.command("quit") }
    }

    /// Unpauses h1, h2 100 ms later and h3 250 ms after h1 (each mpv wakes on its own, not two at
    /// once on a 2-core machine), probes them, and returns how far h2's and h3's positions are
    /// from what the written instants predict, in seconds. All three start paused at 0.
    static func headStartTrial(players: [MPVConnection], watchers: [MPVConnection]) async throws -> (Double, Double) {
        var sent: [Int64] = []
        for (h, pause) in [(0, 100), (1, 150), (2, 0)] {
            sent.append(try await players[h].send(["set_property", "pause", false]).sentAt)
            try await Task.sleep(nanoseconds: UInt64(pause) * 1_000_000)
        }
        let (s1, s2, s3) = (sent[0], sent[1], sent[2])
        let probe = PositionProbe(players: watchers)
        try await Task.sleep(nanoseconds: 300_000_000)
        probe.start()
        try await Task.sleep(nanoseconds: 1_000_000_000)
        let tracks = await probe.stop()
        let t = MonotonicClock.read() - 500 * Nanos.millisecond
        let p = try tracks.map { try #require($0.position(at: t)) }
        // All three started from 0: position differences are the differences of start instants.
        let off2 = (p[0] - p[1]) - Double(s2 - s1) / 1e9, off3 = (p[0] - p[2]) - Double(s3 - s1) / 1e9
        print(String(format: "mpv lab: probe against written unpauses, h2 %.3f ms, h3 %.3f ms", off2 * 1e3, off3 * 1e3))
        return (off2, off3)
    }

    @Test("lockstep mpv on three hosts: play, pause and seek from different hosts' mpv leave every mpv within 5 ms of the others (60 ms paused, 5 ms once resumed); a stalled mpv is back in step within 3.3 s")
    func bridgedPlayersInStep() async throws {
        let media = try TestMedia.tone(seconds: 600)
        let lab = try Lab(hosts: 3, name: "mpvb")
        defer { lab.destroy() }
        // verbose: with LOCKSTEP_LAB_KEEP, each bridge's decisions say why an mpv was where it was
        let sockets = try await BridgedMPV.start(lab: lab, hosts: [1, 2, 3], media: media, verbose: true)
        var users: [MPVConnection] = [], watchers: [MPVConnection] = []
        for socket in sockets {
            users.append(try await MPVConnection.connect(socketPath: socket, timeout: 5))
            watchers.append(try await MPVConnection.connect(socketPath: socket, timeout: 5))
        }
        let probe = PositionProbe(players: watchers, interval: 0.01)
        probe.start()
        func wait(_ seconds: Double) async throws { try await Task.sleep(nanoseconds: UInt64(seconds * 1e9)) }
        var marks: [(String, Int64)] = []
        func mark(_ name: String) { marks.append((name, MonotonicClock.read() - 300 * Nanos.millisecond)) }

        // A start or resume lands where each mpv acts on its unpause. On a loaded 2-core machine
        // mpv acted on IPC up to 35 ms after the bridge wrote to it (decision to paused position,
        // lockstep-mpv --verbose logs), and the agent closes such an error with ±2 % rate nudges:
        // 0.2 s + error / 0.02, so 2 s for 35 ms. Each in-step mark is therefore 4 s after the
        // command (a CI run saw 9.9 ms at 2.2 s after a play: what a start about 46 ms late leaves).
        try await wait(1)
        try await users[0].set("pause", false)  // a user on h1 presses play
        try await wait(4)
        mark("playing")
        try await users[1].set("pause", true)  // a user on h2 pauses
        try await wait(2)
        mark("paused")
        try await users[0].set("pause", false)  // a user on h1 resumes, where each mpv stands
        try await wait(4)
        mark("resumed")
        try await users[1].set("pause", true)
        try await wait(1.5)
        try await users[2].command("seek", 120, "absolute")  // a user on h3 seeks (paused)
        try await wait(1.5)
        try await users[0].set("pause", false)
        try await wait(4)
        mark("after the seek")
        let stalled = try #require(try await users[1].get("pid").int)
        kill(pid_t(stalled), SIGSTOP)
        try await wait(1)
        kill(pid_t(stalled), SIGCONT)
        try await wait(3.3)
        mark("after the stall")
        let tracks = await probe.stop()
        for c in users + watchers { await c.close() }

        for (name, t) in marks {
            let p = tracks.compactMap { $0.position(at: t) }
            try #require(p.count == 3, "\(name): every mpv has a position")
            let spread = p.max()! - p.min()!
            // Paused, each mpv stops where it acts on the bridge's pause, written when its last
            // reading says it reaches the group's position: a reading taken during a rate
            // correction can be off by a few ms, and on a loaded machine the bridge wrote the
            // pause up to 25 ms late and mpv acted on it up to 35 ms after (18 runs beside a
            // release build at idle priority: spreads median 4.1 ms, 5 over 15 ms, at most 34.2).
            // Nothing of it carries into playback: the resume starts each mpv where it stands
            // ("resumed" is held to 5 ms; at most 1.7 ms in 12 of those runs).
            let limit = name == "paused" ? 0.06 : 0.005
            #expect(spread < limit, "\(name): positions \(p) spread \(spread * 1000) ms")
            let series = stride(from: t - 2500 * Nanos.millisecond, through: t, by: Int(100 * Nanos.millisecond)).map { u -> String in
                let q = tracks.compactMap { $0.position(at: u) }
                guard q.count == 3 else { return "-" }
                return String(format: "%.1f", (q[1] - q[0]) * 1000) + "/" + String(format: "%.1f", (q[2] - q[0]) * 1000)
            }
            print("mpv bridged lab: \(name) spread \(String(format: "%.2f", spread * 1000)) ms; h2-h1/h3-h1 (ms) every 100 ms before: \(series.joined(separator: " "))")
            switch name {
            case "paused":
                let before = tracks.compactMap { $0.position(at: t - 500 * Nanos.millisecond) }
                #expect(zip(p, before).allSatisfy { abs($0 - $1) < 0.001 }, "paused: positions do not move (\(before) then \(p))")
            case "after the seek":
                #expect(p.allSatisfy { $0 > 120 && $0 < 126 }, "after the seek: every mpv plays from 120 s (\(p))")
            default:
                break
            }
        }
        for c in users { _ = try? await c.command("quit") }
    }
}
