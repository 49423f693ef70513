import LockstepClient
import LockstepPlayerProtocol
import LockstepTestKit
import NIOCore
import NIOPosix
import Synchronization
import Testing

/// Where the agent's lines are handled on the client side: on the connection's event loop, by
/// a handler given to the connection, and by a coordinator (and a delegate) running on that loop.
@Suite("Event loop delivery", .serialized)
struct EventLoopDeliveryTests {
    static let ms: Int64 = 1_000_000

    /// Events handed to `onEvent`, with whether each came on the connection's loop.
    final class Seen: Sendable {
        let events = Mutex<[(name: String, onLoop: Bool)]>([])
    }

    @Test("with onEvent, each event is handed over on the connection's event loop, in order, and none reaches the stream, which still ends with the connection")
    func onEventOnTheLoop() async throws {
        try await withTemporaryDirectory { dir in
            try await withRunningAgent(in: dir) { socket, _ in
                let loop = MultiThreadedEventLoopGroup.singleton.next()
                let seen = Seen()
                let streamed = try await LockstepClient.withConnection(socketPath: socket, group: loop, onEvent: { event in
                    seen.events.withLock { $0.append((event.name, loop.inEventLoop)) }
                }) { watcher in
                    let _: GroupStateView = try await watcher.request("subscribe", SubscribeRequest(topics: [.players]))
                    // A player comes and goes on the same agent: its players change twice at least.
                    try await LockstepClient.withConnection(socketPath: socket) { player in
                        let _: HelloResult = try await player.request("hello", HelloRequest(role: .player, name: "p", capabilities: PlayerCapabilities()))
                        let _: LoadResult = try await player.request("load", LoadRequest(item: "lockstep://loop-tests/one", share: .group))
                    }
                    #expect(await eventually("both changes") { seen.events.withLock { $0.count } >= 2 })
                    return Task { var n = 0; for await _ in watcher.events { n += 1 }; return n }
                }
                #expect(await streamed.value == 0, "the stream ended with the connection, empty")
                let events = seen.events.withLock { $0 }
                #expect(events.allSatisfy { $0.name == "players_changed" && $0.onLoop })
            }
        }
    }

    /// A player that runs on a given event loop (its executor).
    actor LoopPlayer: PlayerDelegate {
        nonisolated let loop: any EventLoop
        nonisolated var unownedExecutor: UnownedSerialExecutor { loop.executor.asUnownedSerialExecutor() }
        private(set) var plays: [PlayCommand] = []

        init(loop: any EventLoop) { self.loop = loop }

        func play(_ c: PlayCommand) { plays.append(c) }
        func pause(_ c: PauseCommand) {}
        func currentPosition() -> PositionSample? { PositionSample(itemTimeNs: 0, hostTimeNs: MonotonicClock.read()) }
    }

    @Test("a coordinator runs on the event loop its configuration names, and a delegate that shares the loop gets its commands")
    func coordinatorOnItsLoop() async throws {
        try await withTemporaryDirectory { dir in
            try await withRunningAgent(in: dir) { socket, _ in
                let loop = MultiThreadedEventLoopGroup.singleton.next()
                let player = LoopPlayer(loop: loop)
                var config = PlaybackCoordinator.Configuration(name: "on-loop", socketPath: socket, capabilities: PlayerCapabilities(exactSeek: true, startAtHostTime: true))
                config.eventLoop = loop
                let coordinator = PlaybackCoordinator(delegate: player, configuration: config)
                #expect(coordinator.eventLoop === loop)
                try await coordinator.run { c in
                    try await c.transition(toItem: "lockstep://loop-tests/two", durationNs: 600_000 * Self.ms)
                    try await c.setReady()
                    try await c.coordinateRateChange(to: 1)
                    #expect(await eventually("play") { await !player.plays.isEmpty })
                }
                #expect(await player.plays.first?.originator.player == "on-loop")
            }
        }
    }
}
