import Foundation
import LockstepCore
import LockstepPlayerProtocol
import NIOCore
import NIOPosix
import Synchronization

/// One client connection to mpv's JSON IPC (`--input-ipc-server=PATH`).
///
///     let mpv = try await MPVConnection.connect(socketPath: path, timeout: 5)
///     try await mpv.set("pause", false)
///     let position = try await mpv.get("time-pos").double
///     _ = try await mpv.observe("pause")
///     for await event in mpv.events { ... }      // property-change, seek, playback-restart, end-file…
///
/// Requests carry a `request_id` and are matched to their replies, so any number may be in
/// flight. Every line read from the socket is stamped with the host time (`CLOCK_MONOTONIC`,
/// ``MonotonicClock/read()``) in the channel handler that receives its bytes, before it is
/// parsed; every request is stamped just before it is written. A reply therefore brackets the
/// instant mpv evaluated it: `sentAt ≤ evaluated ≤ receivedAt` (see ``MPVReply``).
///
/// When mpv quits (or the socket closes for any reason) ``events`` ends and every pending
/// request fails with ``MPVError/disconnected``; ``connect(socketPath:timeout:group:)`` with a
/// timeout is the reconnect helper (it retries until mpv's socket answers).
public final class MPVConnection: Sendable {
    public let socketPath: String
    /// Events from mpv, in the order mpv sent them, for one reader at a time. Events wait in a
    /// queue (the newest 4096 are kept) until read, through this stream or ``nextEvent(timeout:where:)``.
    /// The stream ends when the connection closes, or when the task reading it is cancelled;
    /// the queue stays, so a new stream (or ``nextEvent(timeout:where:)``) goes on from there.
    public var events: AsyncStream<MPVEvent> {
        let core = self.core
        return AsyncStream(unfolding: { await core.nextEvent(timeout: nil) })
    }

    private let channel: any Channel
    private let core: MPVConnectionCore

    private init(socketPath: String, channel: any Channel, core: MPVConnectionCore) {
        self.socketPath = socketPath
        self.channel = channel
        self.core = core
    }

    deinit {
        channel.close(promise: nil)
    }

    /// Connects to mpv's socket. With a `timeout` (seconds), retries every 20 ms until the
    /// socket answers: for an mpv that is starting, or restarting after a crash.
    public static func connect(
        socketPath: String, timeout: Double = 0,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> MPVConnection {
        let deadline = MonotonicClock.read() + Nanos.from(seconds: timeout)
        while true {
            do {
                return try await connectOnce(socketPath: socketPath, group: group)
            } catch let error as MPVError {
                if MonotonicClock.read() >= deadline { throw error }
                try await Task.sleep(nanoseconds: 20_000_000)
            }
        }
    }

    private static func connectOnce(socketPath: String, group: any EventLoopGroup) async throws -> MPVConnection {
        let core = MPVConnectionCore()
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: group)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(MPVLineHandler(core: core))
                    }
                }
                .connect(unixDomainSocketPath: socketPath).get()
        } catch {
            throw MPVError.cannotConnect(socketPath: socketPath, reason: "\(error)")
        }
        return MPVConnection(socketPath: socketPath, channel: channel, core: core)
    }

    /// Connects again to the same socket (see ``connect(socketPath:timeout:group:)``).
    public func reconnect(timeout: Double = 5) async throws -> MPVConnection {
        try await MPVConnection.connect(socketPath: socketPath, timeout: timeout)
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
        let channel = self.channel, core = self.core
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<MPVReply, any Error>) in
                guard core.add(id, continuation) else { return }
                channel.eventLoop.execute {
                    core.markSent(id, at: MonotonicClock.read())
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
        let deadline = MonotonicClock.read() + Nanos.from(seconds: timeout)
        while true {
            let left = deadline - MonotonicClock.read()
            guard left > 0, let event = await core.nextEvent(timeout: left) else { return nil }
            if predicate(event) { return event }
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

/// mpv's answer to one request.
public struct MPVReply: Sendable, Equatable {
    public let requestID: Int64
    /// mpv's `error` field: `"success"`, or why the command failed (`"property unavailable"`…).
    public let error: String
    /// mpv's `data` field (``MPVValue/null`` if it sent none).
    public let data: MPVValue
    /// Host time (ns) just before the request was written to the socket.
    public let sentAt: Int64
    /// Host time (ns) when the bytes holding the reply were read from the socket.
    public let receivedAt: Int64

    public init(requestID: Int64, error: String, data: MPVValue, sentAt: Int64, receivedAt: Int64) {
        self.requestID = requestID
        self.error = error
        self.data = data
        self.sentAt = sentAt
        self.receivedAt = receivedAt
    }

    public var succeeded: Bool { error == "success" }
    /// `receivedAt − sentAt`: mpv evaluated the request somewhere in between.
    public var roundTrip: Int64 { receivedAt - sentAt }
    /// The middle of the round trip: the best guess of when mpv evaluated the request.
    public var midpoint: Int64 { sentAt + (receivedAt - sentAt) / 2 }
}

/// A line from mpv that is not a reply: `{"event":"property-change","id":1,"name":"pause","data":true}`.
public struct MPVEvent: Sendable, Equatable {
    /// The `event` field: `property-change`, `seek`, `playback-restart`, `file-loaded`,
    /// `start-file`, `end-file`, `idle`, `shutdown`, `client-message`…
    public let name: String
    /// Host time (ns) when the bytes holding this line were read from the socket.
    public let receivedAt: Int64
    /// Every field of the line (including `event`).
    public let fields: [String: MPVValue]

    public init(name: String, receivedAt: Int64, fields: [String: MPVValue]) {
        self.name = name
        self.receivedAt = receivedAt
        self.fields = fields
    }

    /// The property of a `property-change` event.
    public var propertyName: String? { name == "property-change" ? fields["name"]?.string : nil }
    /// The `data` field: a `property-change` event's new value (absent if the property is unavailable).
    public var data: MPVValue? { fields["data"] }
    /// The observer id of a `property-change` event.
    public var observerID: Int64? { fields["id"]?.int }
    /// The `reason` of an `end-file` event: `eof`, `stop`, `quit`, `error`, `redirect`.
    public var reason: String? { fields["reason"]?.string }
}

/// Why talking to mpv failed.
public enum MPVError: Error, CustomStringConvertible, Equatable {
    /// Nothing answers on the socket (mpv not running, or not with `--input-ipc-server=PATH`).
    case cannotConnect(socketPath: String, reason: String)
    /// The connection closed before the reply came (mpv quit).
    case disconnected
    /// mpv answered with an error.
    case failed(command: String, error: String)
    /// mpv could not be started, or did not answer in time.
    case launchFailed(String)

    public var description: String {
        switch self {
        case .cannotConnect(let path, let reason): "cannot connect to mpv at \(path): \(reason)"
        case .disconnected: "the connection to mpv closed (mpv quit?)"
        case .failed(let command, let error): "mpv refused \(command): \(error)"
        case .launchFailed(let why): "cannot start mpv: \(why)"
        }
    }
}

/// The state shared by a connection and its channel handler: requests awaiting replies, ids,
/// and the queue of events.
final class MPVConnectionCore: Sendable {
    private struct Waiter {
        var continuation: CheckedContinuation<MPVReply, any Error>
        var sentAt: Int64 = 0
    }

    private struct State {
        var nextID: Int64 = 0
        var nextObserverID: Int64 = 0
        var waiting: [Int64: Waiter] = [:]
        /// Requests cancelled before they were registered.
        var cancelled: Set<Int64> = []
        var closed = false
    }

    private let state = Mutex(State())
    private struct Events {
        var queue: [MPVEvent] = []
        var head = 0
        /// The reader waiting for the next event (one reader at a time), with its ticket.
        var waiter: (ticket: Int64, continuation: CheckedContinuation<MPVEvent?, Never>)?
        var nextTicket: Int64 = 0
        /// The last ticket that registered as the waiter (or got its answer at once).
        var lastSeated: Int64 = 0
        /// Tickets abandoned before they were seated (a timeout or cancellation that raced them).
        var abandoned: Set<Int64> = []
        var closed = false

        var count: Int { queue.count - head }

        mutating func pop() -> MPVEvent? {
            guard head < queue.count else { return nil }
            defer {
                head += 1
                if head > 1024 && head * 2 > queue.count {
                    queue.removeFirst(head)
                    head = 0
                }
            }
            return queue[head]
        }
    }

    private let events = Mutex(Events())
    static let maxQueuedEvents = 4096

    var isClosed: Bool { state.withLock { $0.closed } }

    func nextID() -> Int64 {
        state.withLock { s in
            s.nextID += 1
            return s.nextID
        }
    }

    func nextObserverID() -> Int64 {
        state.withLock { s in
            s.nextObserverID += 1
            return s.nextObserverID
        }
    }

    /// Registers a request; false (and the continuation resumed with an error) if it cannot be sent.
    func add(_ id: Int64, _ continuation: CheckedContinuation<MPVReply, any Error>) -> Bool {
        let refusal: (any Error)? = state.withLock { s in
            if s.cancelled.remove(id) != nil { return CancellationError() }
            if s.closed { return MPVError.disconnected }
            s.waiting[id] = Waiter(continuation: continuation)
            return nil
        }
        if let refusal {
            continuation.resume(throwing: refusal)
            return false
        }
        return true
    }

    func markSent(_ id: Int64, at time: Int64) {
        state.withLock { $0.waiting[id]?.sentAt = time }
    }

    func fail(_ id: Int64, _ error: any Error) {
        state.withLock { $0.waiting.removeValue(forKey: id) }?.continuation.resume(throwing: error)
    }

    func cancel(_ id: Int64) {
        let waiter: Waiter? = state.withLock { s in
            if let w = s.waiting.removeValue(forKey: id) { return w }
            s.cancelled.insert(id)
            return nil
        }
        waiter?.continuation.resume(throwing: CancellationError())
    }

    /// One parsed line from mpv, read at host time `receivedAt`.
    func deliver(_ line: [String: MPVValue], receivedAt: Int64) {
        if let name = line["event"]?.string {
            let event = MPVEvent(name: name, receivedAt: receivedAt, fields: line)
            let waiter = events.withLock { e -> CheckedContinuation<MPVEvent?, Never>? in
                if let w = e.waiter {
                    e.waiter = nil
                    return w.continuation
                }
                e.queue.append(event)
                if e.count > Self.maxQueuedEvents { _ = e.pop() }
                return nil
            }
            waiter?.resume(returning: event)
            return
        }
        guard let id = line["request_id"]?.int,
              let waiter = state.withLock({ $0.waiting.removeValue(forKey: id) })
        else { return }
        waiter.continuation.resume(returning: MPVReply(
            requestID: id, error: line["error"]?.string ?? "success", data: line["data"] ?? .null,
            sentAt: waiter.sentAt, receivedAt: receivedAt))
    }

    /// The connection closed: pending requests fail, the event stream ends.
    func finish() {
        let waiters = state.withLock { s in
            s.closed = true
            defer { s.waiting = [:] }
            return Array(s.waiting.values)
        }
        for w in waiters { w.continuation.resume(throwing: MPVError.disconnected) }
        let reader = events.withLock { e in
            e.closed = true
            defer { e.waiter = nil }
            return e.waiter?.continuation
        }
        reader?.resume(returning: nil)
    }

    /// The next queued event, waiting for one up to `timeout` ns (nil: forever); nil on
    /// timeout, cancellation, or once the connection has closed and the queue is empty.
    func nextEvent(timeout: Int64?) async -> MPVEvent? {
        let ticket = events.withLock { e in
            e.nextTicket += 1
            return e.nextTicket
        }
        let timer = timeout.map { ns in
            Task { [weak self] in
                try? await Task.sleep(nanoseconds: UInt64(max(ns, 0)))
                self?.abandon(ticket)
            }
        }
        defer { timer?.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<MPVEvent?, Never>) in
                let ready: MPVEvent?? = events.withLock { e in
                    e.lastSeated = ticket
                    if e.abandoned.remove(ticket) != nil { return .some(nil) }
                    if let event = e.pop() { return .some(event) }
                    if e.closed || Task.isCancelled { return .some(nil) }
                    let previous = e.waiter
                    e.waiter = (ticket, continuation)
                    previous?.continuation.resume(returning: nil)  // one reader at a time
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            abandon(ticket)
        }
    }

    /// Stops waiting for an event (timeout or cancellation): the waiter gets nil.
    private func abandon(_ ticket: Int64) {
        let waiter = events.withLock { e -> CheckedContinuation<MPVEvent?, Never>? in
            guard let w = e.waiter, w.ticket == ticket else {
                if ticket > e.lastSeated { e.abandoned.insert(ticket) }
                return nil
            }
            e.waiter = nil
            return w.continuation
        }
        waiter?.resume(returning: nil)
    }
}

/// Splits mpv's output into lines, stamps each with the host time of the read that completed
/// it, parses it and hands it to the connection.
///
///     read() ──► t = CLOCK_MONOTONIC ──► {"request_id":3,"error":"success","data":1.5}\n{"event":"seek"}\n
///                                        └────────── reply, at t ─────────────────┘ └ event, at t ┘
final class MPVLineHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let core: MPVConnectionCore
    private var pending = ByteBuffer()
    private var framer = LineFrameDecoder(maxLineBytes: 64 << 20)
    private let decoder = JSONDecoder()

    init(core: MPVConnectionCore) {
        self.core = core
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let now = MonotonicClock.read()
        var bytes = unwrapInboundIn(data)
        pending.writeBuffer(&bytes)
        while let frame = framer.next(&pending) {
            guard case .line(let line) = frame else { continue }
            if let object = try? decoder.decode([String: MPVValue].self, from: Data(line)) {
                core.deliver(object, receivedAt: now)
            }
        }
        if pending.readerIndex > 65536 { pending.discardReadBytes() }
    }

    func channelInactive(context: ChannelHandlerContext) {
        core.finish()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
