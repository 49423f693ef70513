import Foundation
import LockstepCore
import LockstepPlayerProtocol
import NIOCore
import NIOPosix

/// One client connection to mpv's JSON IPC (`--input-ipc-server=PATH`).
///
///     let mpv = try await MPVConnection.connect(socketPath: path, timeout: 5)
///     try await mpv.set("pause", false)
///     let position = try await mpv.get("time-pos").double
///     _ = try await mpv.observe("pause")
///     for await event in mpv.events { ... }      // property-change, seek, playback-restart, end-file…
///
/// Requests carry a `request_id` and are matched to their replies, so any number may be in
/// flight. Every line read from the socket is stamped with the host time (the connection's
/// ``HostClock``: ``MonotonicClock``, `CLOCK_MONOTONIC`, unless another is given) in the channel
/// handler that receives its bytes, before it is parsed; every request is stamped just before it
/// is written. A reply therefore brackets the instant mpv evaluated it:
/// `sentAt ≤ evaluated ≤ receivedAt` (see ``MPVReply``). Timeouts are real time, whatever the clock.
///
/// When mpv quits (or the socket closes for any reason) ``events`` ends and every pending
/// request fails with ``MPVError/disconnected``; ``connect(socketPath:timeout:group:clock:)`` with a
/// timeout is the reconnect helper (it retries until mpv's socket answers).
public final class MPVConnection: Sendable {
    public let socketPath: String
    /// What stamps requests and replies.
    public let clock: any HostClock
    /// Events from mpv, in the order mpv sent them, for one reader at a time. Events wait in a
    /// queue (the newest 4096 are kept) until read, through this stream or ``nextEvent(timeout:where:)``.
    /// The stream ends when the connection closes, or when the task reading it is cancelled;
    /// the queue stays, so a new stream (or ``nextEvent(timeout:where:)``) goes on from there.
    public var events: AsyncStream<MPVEvent> {
        let core = self.core
        return AsyncStream(unfolding: { await core.nextEvent() })
    }

    private let channel: any Channel
    private let core: MPVConnectionCore

    private init(socketPath: String, clock: any HostClock, channel: any Channel, core: MPVConnectionCore) {
        self.socketPath = socketPath
        self.clock = clock
        self.channel = channel
        self.core = core
    }

    deinit {
        channel.close(promise: nil)
    }

    /// Connects to mpv's socket. With a `timeout` (seconds), retries every 20 ms until the
    /// socket answers: for an mpv that is starting, or restarting after a crash. `clock` stamps
    /// requests and replies.
    public static func connect(
        socketPath: String, timeout: Double = 0,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        clock: any HostClock = MonotonicClock()
    ) async throws -> MPVConnection {
        let deadline = ContinuousClock.now + .nanoseconds(Nanos.from(seconds: timeout))
        while true {
            do {
                return try await connectOnce(socketPath: socketPath, group: group, clock: clock)
            } catch let error as MPVError {
                if ContinuousClock.now >= deadline { throw error }
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    private static func connectOnce(socketPath: String, group: any EventLoopGroup, clock: any HostClock) async throws -> MPVConnection {
        let core = MPVConnectionCore()
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: group)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(MPVLineHandler(core: core, clock: clock))
                    }
                }
                .connect(unixDomainSocketPath: socketPath).get()
        } catch {
            throw MPVError.cannotConnect(socketPath: socketPath, reason: "\(error)")
        }
        return MPVConnection(socketPath: socketPath, clock: clock, channel: channel, core: core)
    }

    /// Connects again to the same socket, with the same clock (see
    /// ``connect(socketPath:timeout:group:clock:)``).
    public func reconnect(timeout: Double = 5) async throws -> MPVConnection {
        try await MPVConnection.connect(socketPath: socketPath, timeout: timeout, clock: clock)
    }

    /// True once the connection has closed (mpv quit, or ``close()``).
    public var isClosed: Bool { core.isClosed }

    /// Closes the connection (mpv keeps running) and waits until it is closed.
    public func close() async {
        channel.close(promise: nil)
        try? await channel.closeFuture.get()
    }

    /// Returns when the connection has closed, e.g. because mpv quit.
    public func waitUntilClosed() async {
        try? await channel.closeFuture.get()
    }

    // MARK: Commands

    /// Sends `command` (mpv's `"command"` array) and returns mpv's reply, whether the command
    /// succeeded or not. Throws only if the reply cannot come (``MPVError/disconnected``) or the
    /// task is cancelled.
    public func send(_ command: [MPVValue]) async throws -> MPVReply {
        let id = core.nextID()
        let line = try MPVConnection.encode(command: command, id: id)
        let channel = self.channel, core = self.core, clock = self.clock
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<MPVReply, any Error>) in
                guard core.add(id, continuation) else { return }
                channel.eventLoop.execute {
                    core.markSent(id, at: clock.now())
                    channel.writeAndFlush(line).whenFailure { _ in core.fail(id, MPVError.disconnected) }
                }
            }
        } onCancel: {
            core.cancel(id)
        }
    }

    /// Runs an mpv command (`["seek", 10, "absolute+exact"]` is `command("seek", 10, "absolute+exact")`)
    /// and returns its `data`; throws ``MPVError/failed(command:error:)`` if mpv refuses it.
    @discardableResult
    public func command(_ name: String, _ arguments: MPVValue...) async throws -> MPVValue {
        try await run([.string(name)] + arguments)
    }

    /// The value of a property (`get_property`).
    public func get(_ property: String) async throws -> MPVValue {
        try await run(["get_property", .string(property)])
    }

    /// Sets a property (`set_property`).
    public func set(_ property: String, _ value: MPVValue) async throws {
        try await run(["set_property", .string(property), value])
    }

    /// Observes a property (`observe_property`): ``events`` then carries a `property-change`
    /// event with the property's value at once and at every change. Returns the observer id
    /// (the event's ``MPVEvent/observerID``).
    @discardableResult
    public func observe(_ property: String) async throws -> Int64 {
        let id = core.nextObserverID()
        try await run(["observe_property", .int(id), .string(property)])
        return id
    }

    /// Stops an observation (`unobserve_property`).
    public func unobserve(_ observerID: Int64) async throws {
        try await run(["unobserve_property", .int(observerID)])
    }

    /// The next event that satisfies `predicate` (events before it are dropped), or nil if
    /// none comes within `timeout` seconds or the connection closes. Reads the same queue as
    /// ``events``: use one or the other at a time.
    public func nextEvent(timeout: Double, where predicate: @Sendable (MPVEvent) -> Bool = { _ in true }) async -> MPVEvent? {
        let deadline = ContinuousClock.now + .nanoseconds(Nanos.from(seconds: timeout))
        while let event = await nextEvent(before: deadline) {
            if predicate(event) { return event }
        }
        return nil
    }

    /// The next event, or nil at `deadline`: a reader and a timer race, and the loser is
    /// cancelled. A reader cancelled just after it got an event still returns it, and it is
    /// kept rather than lost.
    private func nextEvent(before deadline: ContinuousClock.Instant) async -> MPVEvent? {
        guard ContinuousClock.now < deadline else { return nil }
        let core = self.core
        return await withTaskGroup(of: MPVEvent?.self) { race in
            race.addTask { await core.nextEvent() }
            race.addTask {
                try? await Task.sleep(until: deadline)
                return nil
            }
            let first = await race.next() ?? nil
            race.cancelAll()
            if let first { return first }
            for await case let event? in race { return event }
            return nil
        }
    }

    @discardableResult
    private func run(_ command: [MPVValue]) async throws -> MPVValue {
        let reply = try await send(command)
        guard reply.succeeded else {
            throw MPVError.failed(command: command.map { $0.string ?? $0.description }.joined(separator: " "), error: reply.error)
        }
        return reply.data
    }

    private static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.withoutEscapingSlashes]
        return e
    }()

    private struct Request: Encodable {
        var command: [MPVValue]
        var request_id: Int64
    }

    private static func encode(command: [MPVValue], id: Int64) throws -> ByteBuffer {
        let data = try encoder.encode(Request(command: command, request_id: id))
        var buffer = ByteBuffer()
        buffer.reserveCapacity(data.count + 1)
        buffer.writeBytes(data)
        buffer.writeInteger(UInt8(ascii: "\n"))
        return buffer
    }
}
