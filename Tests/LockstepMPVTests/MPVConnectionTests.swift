#if canImport(Glibc)
import Glibc
#endif
import Foundation
import LockstepClient
import LockstepCore
import LockstepLab
import LockstepMPV
import LockstepPlayerProtocol
import LockstepTestKit
import Logging
import Testing

/// A fresh headless mpv (mpv is a dependency of the project: tools/test installs it).
private func launchMPV(media: String? = nil, paused: Bool = true) async throws -> MPVProcess {
    let dir = "/tmp/lockstep-mpv-tests"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    var options = MPVOptions(socketPath: "\(dir)/\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock", media: media)
    options.paused = paused
    return try await MPVProcess.launch(options)
}

/// A 60 s Opus tone, made once and cached (by ffmpeg).
private func tone() throws -> String { try TestMedia.tone(seconds: 60) }

/// Whether `tool` is an executable on PATH: the suites below need a real mpv, and the tests
/// that play media ffmpeg too; without them they are skipped, not failed.
private func onPath(_ tool: String) -> Bool {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
    return path.split(separator: ":").contains { FileManager.default.isExecutableFile(atPath: "\($0)/\(tool)") }
}

private let mpvInstalled = onPath("mpv")
private let ffmpegInstalled = onPath("ffmpeg")

// A time limit on every test: each waits on another process, which may never answer.
@Suite("mpv IPC against a real mpv", .enabled(if: mpvInstalled, "needs mpv on PATH"), .timeLimit(.minutes(1)), .serialized)
struct MPVConnectionTests {
    @Test("launch returns once the socket answers; terminate stops mpv and removes its socket")
    func launchAndTerminate() async throws {
        let mpv = try await launchMPV()
        #expect(mpv.isRunning)
        let c = try await mpv.connect()
        let version = try await c.get("mpv-version").string
        #expect(version?.hasPrefix("mpv ") == true)
        #expect(try await c.get("pid").int == Int64(mpv.pid))
        await mpv.terminate()
        #expect(!mpv.isRunning)
        #expect(!FileManager.default.fileExists(atPath: mpv.options.socketPath))
    }

    @Test("concurrent requests each get their own reply, stamped with host times around the call")
    func concurrentRequests() async throws {
        let mpv = try await launchMPV()
        defer { Task { await mpv.terminate() } }
        let c = try await mpv.connect()
        let before = MonotonicClock.read()
        let replies = try await withThrowingTaskGroup(of: (Int, MPVReply).self) { group in
            for i in 0..<40 {
                group.addTask {
                    if i % 2 == 0 {
                        return (i, try await c.send(["expand-text", .string("n=\(i)")]))
                    }
                    return (i, try await c.send(["get_property", "idle-active"]))
                }
            }
            var all: [Int: MPVReply] = [:]
            for try await (i, r) in group { all[i] = r }
            return all
        }
        let after = MonotonicClock.read()
        #expect(replies.count == 40)
        for (i, r) in replies {
            #expect(r.succeeded)
            #expect(r.data == (i % 2 == 0 ? .string("n=\(i)") : .bool(true)))
            #expect(before <= r.sentAt && r.sentAt <= r.receivedAt && r.receivedAt <= after)
        }
        await c.close()
    }

    @Test("requests, replies and events are stamped by the connection's clock (and a reconnection keeps it)")
    func stampsFromTheGivenClock() async throws {
        let mpv = try await launchMPV()
        defer { Task { await mpv.terminate() } }
        let clock = ManualClock(5 * Nanos.second)
        let c = try await MPVConnection.connect(socketPath: mpv.options.socketPath, timeout: 2, clock: clock)
        let reply = try await c.send(["get_property", "idle-active"])
        #expect(reply.sentAt == 5 * Nanos.second && reply.receivedAt == 5 * Nanos.second)
        clock.advance(by: Nanos.millisecond)
        try await c.observe("pause")
        let event = await c.nextEvent(timeout: 2) { $0.propertyName == "pause" }
        #expect(event?.receivedAt == 5 * Nanos.second + Nanos.millisecond)
        let again = try await c.reconnect()
        #expect(try await again.send(["get_property", "idle-active"]).receivedAt == 5 * Nanos.second + Nanos.millisecond)
        await again.close()
        await c.close()
    }

    @Test("a refused command throws mpv's own error")
    func refused() async throws {
        let mpv = try await launchMPV()
        defer { Task { await mpv.terminate() } }
        let c = try await mpv.connect()
        await #expect(throws: MPVError.failed(command: "get_property no-such-property", error: "property not found")) {
            try await c.get("no-such-property")
        }
        let reply = try await c.send(["no-such-command"])
        #expect(!reply.succeeded)
        #expect(try await c.get("idle-active") == true)  // still usable
    }

    @Test(
        "observed properties and playback events arrive as events, in order; a reader that gives up leaves them queued",
        .enabled(if: ffmpegInstalled, "needs ffmpeg on PATH for its media"))
    func events() async throws {
        let mpv = try await launchMPV()
        defer { Task { await mpv.terminate() } }
        let c = try await mpv.connect()
        let id = try await c.observe("pause")
        let initial = await c.nextEvent(timeout: 2) { $0.propertyName == "pause" }
        #expect(initial?.data == true)
        #expect(initial?.observerID == id)

        // A wait that times out, or a cancelled reader, leaves the queue usable.
        #expect(await c.nextEvent(timeout: 0.05) { _ in false } == nil)
        let reader = Task { for await _ in c.events {} }
        try await Task.sleep(nanoseconds: 50_000_000)
        reader.cancel()
        await reader.value

        try await c.command("loadfile", .string(try tone()))
        #expect(await c.nextEvent(timeout: 5) { $0.name == "file-loaded" } != nil)
        try await c.set("pause", false)
        let unpaused = await c.nextEvent(timeout: 2) { $0.propertyName == "pause" }
        #expect(unpaused?.data == false)
        #expect(unpaused.map { $0.receivedAt <= MonotonicClock.read() } == true)

        try await c.command("seek", 30, "absolute")
        #expect(await c.nextEvent(timeout: 2) { $0.name == "seek" } != nil)
        #expect(await c.nextEvent(timeout: 5) { $0.name == "playback-restart" } != nil)
        let position = try #require(try await c.get("time-pos").double)
        #expect(position >= 30 && position < 32)

        try await c.command("stop")
        let end = await c.nextEvent(timeout: 2) { $0.name == "end-file" }
        #expect(end?.reason == "stop")
    }

    /// The process is in state T (stopped), by /proc.
    static func isStopped(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.range(of: ") ", options: .backwards) else { return false }
        return stat[close.upperBound...].hasPrefix("T")
    }

    @Test("when mpv dies, pending requests fail with .disconnected and the event stream ends")
    func mpvQuits() async throws {
        let mpv = try await launchMPV()
        let c = try await mpv.connect()
        mpv.suspend()
        // SIGSTOP takes effect asynchronously: the request must reach a stopped mpv.
        for _ in 0..<200 where !Self.isStopped(mpv.pid) { try await Task.sleep(nanoseconds: 10_000_000) }
        #expect(Self.isStopped(mpv.pid), "mpv is stopped")
        let pending = Task { try await c.get("idle-active") }
        try await Task.sleep(nanoseconds: 100_000_000)
        kill(mpv.pid, SIGKILL)
        await #expect(throws: MPVError.disconnected) { try await pending.value }
        var remaining = 0
        for await _ in c.events { remaining += 1 }  // ends
        #expect(c.isClosed)
        await #expect(throws: MPVError.disconnected) { try await c.get("idle-active") }
        await mpv.terminate()
    }

    @Test("quit: the reply may or may not come, but the connection ends cleanly")
    func quitCommand() async throws {
        let mpv = try await launchMPV()
        let c = try await mpv.connect()
        #expect(!c.isClosed)
        _ = try? await c.command("quit")
        await c.waitUntilClosed()
        // Closed as its users see it: the event stream ends (rather than hang) and requests fail.
        for await _ in c.events {}
        await #expect(throws: MPVError.disconnected) { try await c.get("idle-active") }
        for _ in 0..<100 where mpv.isRunning { try await Task.sleep(nanoseconds: 20_000_000) }
        #expect(mpv.exitStatus == 0)
    }

    @Test("connect with a timeout waits for mpv to come up (the reconnect helper); without one it fails at once")
    func reconnect() async throws {
        let path = "/tmp/lockstep-mpv-tests/late-\(getpid()).sock"
        unlink(path)
        await #expect(throws: MPVError.self) { try await MPVConnection.connect(socketPath: path) }
        let waiting = Task { try await MPVConnection.connect(socketPath: path, timeout: 10) }
        try await Task.sleep(nanoseconds: 300_000_000)
        var options = MPVOptions(socketPath: path)
        options.paused = true
        let mpv = try await MPVProcess.launch(options)
        let c = try await waiting.value
        #expect(try await c.get("idle-active") == true)
        // mpv restarts: the old connection ends, a new one answers.
        await mpv.terminate()
        await c.waitUntilClosed()
        let again = try await MPVProcess.launch(options)
        let c2 = try await c.reconnect()
        #expect(try await c2.get("pid").int == Int64(again.pid))
        await again.terminate()
    }
}

@Suite(
    "Position probe against real mpv", .enabled(if: mpvInstalled && ffmpegInstalled, "needs mpv and ffmpeg on PATH"),
    .timeLimit(.minutes(1)), .serialized)
struct PositionProbeTests {
    /// The truth of a trial assumes both mpv react to their resume request equally fast. On a
    /// machine saturated by other tests, one mpv may be scheduled milliseconds late (then
    /// `audio-pts` and `time-pos` agree with each other and both miss the truth by as much): such
    /// a trial is repeated, up to 3 times. `tools/bench mpv` runs the check on a quiet machine.
    @Test("the probe finds a 37 ms offset made by seeking, and one made by resuming 37 ms apart, to within 1 ms")
    func knownOffsets() async throws {
        let media = try tone()
        let a = try await launchMPV(media: media), b = try await launchMPV(media: media)
        defer { Task { await a.terminate(); await b.terminate() } }
        let ca = try await a.connect(), cb = try await b.connect()
        for (dp, dt) in [(0.037, 0.0), (0.0, 0.037), (-0.0125, 0.0)] {
            var trials: [ProbeCheck.Trial] = []
            for _ in 0..<3 {
                let trial = try await ProbeCheck.trial(ca, cb, at: 20, positionOffset: dp, timeOffset: dt, sampling: 1)
                trials.append(trial)
                if let e = trial.errors["audio-pts"], abs(e) < 0.001 { break }
            }
            let trial = try #require(trials.last)
            let error = try #require(trial.errors["audio-pts"])
            #expect(abs(trial.truth - (dp - dt)) < 0.02, "the players are where the trial put them")
            #expect(abs(error) < 0.001, "audio-pts, \(trials.count) tries: \(trials.map(\.errors))")
        }
    }

    @Test("a steady player's audio-pts readings lie on a line of slope 1 to within a millisecond")
    func steadyLine() async throws {
        let mpv = try await launchMPV(media: try tone(), paused: false)
        defer { Task { await mpv.terminate() } }
        let c = try await mpv.connect()
        try await Task.sleep(nanoseconds: 300_000_000)
        let probe = PositionProbe(players: [c])
        probe.start()
        try await Task.sleep(nanoseconds: 1_000_000_000)
        let track = try #require(await probe.stop().first)
        #expect(track.points.count > 50)
        let middle = track.points[track.points.count / 2].time
        let e = try #require(track.estimate(at: middle))
        #expect(abs(e.rate - 1) < 0.002)
        #expect(e.residual < 0.001)
    }
}

/// `lockstep mpv`'s bridge end to end: a real mpv, the bridge, an agent in-process.
@Suite("mpv bridge against a real mpv and agent", .enabled(if: mpvInstalled && ffmpegInstalled, "needs mpv and ffmpeg on PATH"), .timeLimit(.minutes(1)), .serialized)
struct MPVBridgeTests {
    /// Polls `check` every 20 ms until it holds or 10 s pass.
    func eventually(_ check: @Sendable () async -> Bool) async -> Bool {
        let deadline = MonotonicClock.read() + 10 * Nanos.second
        while MonotonicClock.read() < deadline {
            if await check() { return true }
            try? await Task.sleep(nanoseconds: 20_000_000)
        }
        return await check()
    }

    /// Whether the agent at `socket` has a player `name` with `item` loaded and ready.
    func loadedAndReady(_ socket: String, _ name: String, _ item: String) async -> Bool {
        let players = try? await LockstepClient.withConnection(socketPath: socket) { c in
            let r: PlayersResult = try await c.request("players")
            return r.players
        }
        return players?.contains { $0.participant.name == name && $0.item == item && $0.participant.readiness == .ready } == true
    }

    @Test("the bridge survives the agent restarting: mpv's file is loaded and ready on the new agent, and the group's play starts mpv")
    func survivesAgentRestart() async throws {
        let media = try tone()
        let mpv = try await launchMPV(media: media)
        let control = try await mpv.connect()
        try await withTemporaryDirectory { dir in
            var o = MPVBridge.Options(agentSocket: dir + "/agent.sock", mpvSocket: mpv.options.socketPath)
            o.name = "mpv-back"
            o.policy.startLatencyNs = 100 * Nanos.millisecond
            o.policy.osd = false
            let bridge = MPVBridge(options: o, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
            let session = Task { try await bridge.runSession() }
            defer { session.cancel() }
            let item = MPVBridge.absolute(media)
            try await withRunningAgent(in: dir) { socket, _ in
                #expect(await eventually { await loadedAndReady(socket, "mpv-back", item) })
            }
            try await withRunningAgent(in: dir) { socket, _ in
                #expect(await eventually { await loadedAndReady(socket, "mpv-back", item) })
                let _: GroupStateView = try await LockstepClient.withConnection(socketPath: socket) { c in
                    try await c.request("command", CommandRequest(action: .play))
                }
                #expect(await eventually { (try? await control.get("pause").bool) == false })
            }
        }
        await control.close()
        await mpv.terminate()
    }
}
