import LockstepClient
import LockstepPlayerProtocol
import LockstepTestKit
import Testing

/// The coordinator against a real agent (in-process, on a private socket): commands reach the
/// player's delegate anchored ahead, the app's calls move the group, suspensions, participants,
/// drift corrections from the player's own clock, and reconnection when the agent restarts.
@Suite("Playback coordinator", .serialized)
struct PlaybackCoordinatorTests {
    static let item = "lockstep://sdk-tests/10-minutes"
    static let ms: Int64 = 1_000_000

    /// Runs `body` with a connected coordinator whose player has loaded the item and is ready.
    func withPlayer<T: Sendable>(
        _ socket: String, _ name: String, _ player: VirtualPlayer, capabilities: PlayerCapabilities = PlayerCapabilities(exactSeek: true, startAtHostTime: true),
        startLatencyNs: Int64? = nil, _ body: @Sendable (PlaybackCoordinator) async throws -> T
    ) async throws -> T {
        var config = PlaybackCoordinator.Configuration(name: name, socketPath: socket, capabilities: capabilities, startLatencyNs: startLatencyNs)
        config.reconnectIntervalNs = 50 * Self.ms
        let coordinator = PlaybackCoordinator(delegate: player, configuration: config)
        return try await coordinator.run { c in
            try await c.transition(toItem: Self.item, durationNs: 600_000 * Self.ms)
            try await c.setReady()
            return try await body(c)
        }
    }

    @Test("a play from the app reaches every player's delegate for one instant, ahead, with its originator")
    func playReachesEveryPlayer() async throws {
        try await withTemporaryDirectory { dir in
            try await withRunningAgent(in: dir) { socket, _ in
                let a = VirtualPlayer(), b = VirtualPlayer()
                try await withPlayer(socket, "swift-a", a, startLatencyNs: 50 * Self.ms) { ca in
                    try await withPlayer(socket, "swift-b", b) { _ in
                        #expect(await eventually("b listed") { await ca.otherParticipants.map(\.name) == ["swift-b"] })
                        #expect(await ca.participants.filter(\.isMe).map(\.name) == ["swift-a"])
                        let asked = MonotonicClock.read()
                        try await ca.coordinateRateChange(to: 1)
                        #expect(await eventually("both play") {
                            let (pa, pb) = (await a.plays, await b.plays)
                            return !pa.isEmpty && !pb.isEmpty
                        })
                        let pa = try #require(await a.plays.first), pb = try #require(await b.plays.first)
                        #expect(pa.hostTimeNs == pb.hostTimeNs && pa.itemTimeNs == pb.itemTimeNs)
                        #expect(abs(pa.rate - 1) < 1e-3)
                        #expect(pa.originator.action == .play && pa.originator.local && pa.originator.player == "swift-a")
                        // Anchored ahead by (most of) the largest start latency among the players.
                        #expect(pa.hostTimeNs - asked >= 40 * Self.ms)
                    }
                }
            }
        }
    }

    @Test("seek and pause from the app come back as commands at the right item time")
    func seekAndPause() async throws {
        try await withTemporaryDirectory { dir in
            try await withRunningAgent(in: dir) { socket, _ in
                let player = VirtualPlayer()
                try await withPlayer(socket, "swift-one", player) { c in
                    try await c.coordinateRateChange(to: 1)
                    #expect(await eventually("play") { await !player.plays.isEmpty })
                    try await c.coordinateSeek(to: 120_000 * Self.ms)
                    #expect(await eventually("seek") { await player.plays.contains { $0.originator.action == .seek } })
                    let seek = try #require(await player.plays.first { $0.originator.action == .seek })
                    #expect(seek.itemTimeNs == 120_000 * Self.ms)
                    try await c.coordinateRateChange(to: 0)
                    #expect(await eventually("pause") { await c.lastCommand.map { if case .pause(let p) = $0 { p.originator.action == .pause } else { false } } ?? false })
                    guard case .pause(let pause)? = await c.lastCommand else { return }
                    #expect(abs(pause.itemTimeNs - seek.itemTime(at: pause.hostTimeNs)) < 2 * Self.ms, "paused where the timeline was at the pause's instant")
                    await #expect(throws: LockstepClient.Failure.self) { try await c.coordinateSeek(to: -1) }
                }
            }
        }
    }

    @Test("a speed change from the app changes the group's rate and keeps a paused group paused")
    func speedChange() async throws {
        try await withTemporaryDirectory { dir in
            try await withRunningAgent(in: dir) { socket, _ in
                let player = VirtualPlayer()
                try await withPlayer(socket, "swift-speed", player) { c in
                    try await c.coordinateSpeedChange(to: 1.5)
                    #expect(await eventually("rate") { (try? await c.playbackStatus().timeline?.rate).map { abs($0 - 1.5) < 1e-3 } ?? false })
                    #expect(try await c.playbackStatus().timeline?.state == .paused)
                    #expect(await player.plays.isEmpty)
                }
            }
        }
    }

    @Test("cancelled while no agent answers, run throws CancellationError without running its body")
    func cancelledWhileWaiting() async throws {
        try await withTemporaryDirectory { dir in
            let coordinator = PlaybackCoordinator(delegate: VirtualPlayer(), name: "swift-alone", socketPath: dir + "/agent.sock")
            let running = Task { try await coordinator.run { _ in Issue.record("ran without an agent") } }
            try await Task.sleep(nanoseconds: 100_000_000)
            running.cancel()
            await #expect(throws: CancellationError.self) { try await running.value }
        }
    }

    @Test("a suspension leaves group playback; its end moves the group to the proposed time")
    func suspension() async throws {
        try await withTemporaryDirectory { dir in
            try await withRunningAgent(in: dir) { socket, _ in
                let a = VirtualPlayer(), b = VirtualPlayer()
                try await withPlayer(socket, "swift-a", a) { ca in
                    try await withPlayer(socket, "swift-b", b) { cb in
                        try await ca.coordinateRateChange(to: 1)
                        #expect(await eventually("b plays") { await !b.plays.isEmpty })
                        let suspension = try await ca.beginSuspension(for: SuspensionReason.interruption)
                        #expect(await eventually("a left group playback") { await !ca.inGroupPlayback })
                        #expect(await ca.suspensionReasons == ["interruption"])
                        #expect(await eventually("b sees it") { await cb.otherParticipants.contains { $0.suspensionReasons == ["interruption"] } })
                        try await suspension.end(proposingNewTime: 30_000 * Self.ms)
                        #expect(await !suspension.isOpen)
                        #expect(await eventually("moved") { await b.plays.contains { $0.originator.reason == "suspension-ended" } })
                        let moved = try #require(await b.plays.first { $0.originator.reason == "suspension-ended" })
                        #expect(moved.itemTimeNs == 30_000 * Self.ms)
                        #expect(await eventually("a back") { await ca.inGroupPlayback })
                    }
                }
            }
        }
    }

    @Test("a player that drifts ahead is nudged by rate, and its rate restored when the nudge ends")
    func rateNudge() async throws {
        try await withTemporaryDirectory { dir in
            try await withRunningAgent(in: dir) { socket, _ in
                let player = VirtualPlayer()
                try await withPlayer(socket, "swift-rate", player, capabilities: PlayerCapabilities(rate: true, exactSeek: true, startAtHostTime: true)) { c in
                    try await c.coordinateRateChange(to: 1)
                    #expect(await eventually("play") { await !player.plays.isEmpty })
                    let play = try #require(await player.plays.first)
                    await player.setOffset(3 * Self.ms)  // its output runs 3 ms ahead of the group
                    #expect(await eventually("nudged") { await !player.rates.isEmpty })
                    #expect(try #require(await player.rates.first) < play.rate, "slowed down to fall back in")
                    #expect(await eventually("restored") {
                        let rates = await player.rates
                        return rates.count >= 2 && rates.last == play.rate
                    })
                    #expect(await player.seeks.isEmpty)
                }
            }
        }
    }

    @Test("a player without rate control is corrected by a seek")
    func seekCorrection() async throws {
        try await withTemporaryDirectory { dir in
            try await withRunningAgent(in: dir) { socket, _ in
                let player = VirtualPlayer()
                try await withPlayer(socket, "swift-seek", player) { c in
                    try await c.coordinateRateChange(to: 1)
                    #expect(await eventually("play") { await !player.plays.isEmpty })
                    await player.setOffset(-80 * Self.ms)  // behind by more than a seek-only player's threshold
                    #expect(await eventually("sought") { await !player.seeks.isEmpty })
                    #expect(try #require(await player.seeks.first).errorNs < 0)
                    #expect(await player.rates.isEmpty)
                }
            }
        }
    }

    @Test("\"play for me only\": a solo item stays out of group playback")
    func solo() async throws {
        try await withTemporaryDirectory { dir in
            try await withRunningAgent(in: dir) { socket, _ in
                let coordinator = PlaybackCoordinator(delegate: VirtualPlayer(), name: "swift-solo", socketPath: socket)
                try await coordinator.run { c in
                    #expect(try await c.transition(toItem: Self.item, share: .solo) == .solo)
                    let status = try await c.playbackStatus()
                    #expect(status.share == .solo && !status.inGroupPlayback)
                }
            }
        }
    }

    @Test("the coordinator reconnects after the agent restarts, restoring item, readiness and suspensions")
    func reconnects() async throws {
        try await withTemporaryDirectory { dir in
            let player = VirtualPlayer()
            var config = PlaybackCoordinator.Configuration(name: "swift-back", socketPath: dir + "/agent.sock", capabilities: PlayerCapabilities(exactSeek: true))
            config.reconnectIntervalNs = 50 * Self.ms
            let coordinator = PlaybackCoordinator(delegate: player, configuration: config)
            let changes = await coordinator.changes()
            let running = Task {
                try await coordinator.run { c in
                    try await Task.sleep(nanoseconds: 60_000_000_000)
                }
            }
            defer { running.cancel() }
            try await withRunningAgent(in: dir) { _, _ in
                await coordinator.waitConnected()
                try await coordinator.transition(toItem: Self.item)
                try await coordinator.setReady()
                _ = try await coordinator.beginSuspension(for: "interruption")
            }
            #expect(await eventually("lost") { await !coordinator.isConnected })
            await #expect(throws: LockstepClient.Failure.disconnected) { try await coordinator.coordinateRateChange(to: 1) }
            try await withRunningAgent(in: dir) { _, _ in
                await coordinator.waitConnected()
                let status = try await coordinator.playbackStatus()
                #expect(status.item == Self.item && status.readiness == .ready && status.suspensionReasons == ["interruption"])
            }
            var seen: [Bool] = []
            for await change in changes {
                if case .connection(let up) = change { seen.append(up) }
                if seen.count == 3 { break }
            }
            #expect(seen == [true, false, true])
        }
    }
}

extension PlaybackCoordinatorTests {
    @Test("a saved output latency survives an agent restart and applies to the next hello of that name without its own")
    func savedOutputLatency() async throws {
        try await withTemporaryDirectory { dir in
            try await withRunningAgent(in: dir) { socket, _ in
                let coordinator = PlaybackCoordinator(delegate: VirtualPlayer(), name: "swift-tv", socketPath: socket)
                let saved = try await coordinator.run { try await $0.saveOutputLatency(80 * Self.ms) }
                #expect(saved == [SavedLatency(name: "swift-tv", outputLatencyNs: 80 * Self.ms)])
            }
            try await withRunningAgent(in: dir) { socket, _ in
                let tv = PlaybackCoordinator(delegate: VirtualPlayer(), name: "swift-tv", socketPath: socket)
                let other = PlaybackCoordinator(delegate: VirtualPlayer(), name: "swift-other", socketPath: socket)
                let own = PlaybackCoordinator(delegate: VirtualPlayer(), name: "swift-tv", socketPath: socket, outputLatencyNs: 5 * Self.ms)
                try await tv.run { _ in
                    try await other.run { _ in
                        try await own.run { _ in
                            let players: PlayersResult = try await LockstepClient.withConnection(socketPath: socket) { try await $0.request("players") }
                            let latencies = players.players.map { "\($0.participant.name)=\($0.outputLatencyNs / Self.ms)" }.sorted()
                            #expect(latencies == ["swift-other=0", "swift-tv=5", "swift-tv=80"])
                        }
                    }
                }
                let list: LatencyListResult = try await LockstepClient.withConnection(socketPath: socket) { try await $0.request("latency_list") }
                #expect(list.latencies.map(\.name) == ["swift-tv"])
            }
        }
    }

    @Test("a start latency updated while connected is the player's at once, as the agent shows it")
    func updatedStartLatency() async throws {
        try await withTemporaryDirectory { dir in
            try await withRunningAgent(in: dir) { socket, _ in
                let coordinator = PlaybackCoordinator(delegate: VirtualPlayer(), name: "swift-mpv", socketPath: socket, startLatencyNs: 80 * Self.ms)
                try await coordinator.run { c in
                    func declared() async throws -> [Int64] {
                        let players: PlayersResult = try await LockstepClient.withConnection(socketPath: socket) { try await $0.request("players") }
                        return players.players.map(\.startLatencyNs)
                    }
                    #expect(try await declared() == [80 * Self.ms])
                    try await c.updateStartLatency(30 * Self.ms)
                    #expect(try await declared() == [30 * Self.ms])
                    #expect(await c.startLatencyNs == 30 * Self.ms)
                    await #expect(throws: ProtocolError.self) { try await c.updateStartLatency(-1) }
                }
            }
        }
    }
}
