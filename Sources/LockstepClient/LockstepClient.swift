import Foundation
import LockstepPlayerProtocol
import NIOCore
import NIOPosix
import Synchronization

/// A client of the local agent's player socket: for the CLI, the tools and any Swift player.
///
///     try await LockstepClient.withConnection(socketPath: path) { agent in
///         let status: AgentStatus = try await agent.request("status")
///         for await event in agent.events { ... }
///     }
///
/// Requests are matched to replies by `request_id`; events arrive on ``events`` in order (or,
/// given `onEvent`, are handed to it on the connection's event loop). The connection is closed
/// when the closure returns.
public struct LockstepClient: Sendable {
    /// Why talking to the agent failed.
    public enum Failure: Error, CustomStringConvertible, Equatable {
        /// Nothing listens on the socket.
        case agentNotRunning(socketPath: String)
        /// The socket exists but this user may not use it.
        case permissionDenied(socketPath: String)
        /// The agent answered with an error.
        case rejected(ProtocolError)
        /// The connection closed before the reply came.
        case disconnected
        /// The reply could not be read.
        case badReply(String)

        public var description: String {
            switch self {
            case .agentNotRunning(let path):
                "no Lockstep agent is running on \(path); start one with 'lockstepd' (or pass --socket)"
            case .permissionDenied(let path):
                "not allowed to use \(path) (the agent's socket is private to its user; see --socket-mode)"
            case .rejected(let e): "the agent refused: \(e.message) (\(e.code.rawValue))"
            case .disconnected: "the agent closed the connection"
            case .badReply(let why): "unreadable reply from the agent: \(why)"
            }
        }
    }

    /// An unsolicited message from the agent: its `event` name and the whole line.
    public struct Event: Sendable {
        public let name: String
        public let json: [UInt8]

        /// Decodes the line as `T`.
        public func decode<T: Decodable>(_ type: T.Type) throws -> T {
            do { return try PlayerJSON.decode(T.self, from: json) } catch { throw Failure.badReply(error.message) }
        }
    }

    private let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    private let pending: Pending
    /// Events from the agent, in the order they were sent; with `onEvent`, none (it ends when
    /// the connection does).
    public let events: AsyncStream<Event>

    /// Connects, runs `body`, and closes the connection. With `onEvent`, each event goes to it as
    /// it is read, in order, on the connection's event loop (one of `group`'s), not onto
    /// ``events``: an actor whose executor is that loop handles it on the thread that read it
    /// (``PlaybackCoordinator`` does), with no task woken in between.
    public static func withConnection<T: Sendable>(
        socketPath: String, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        onEvent: (@Sendable (Event) -> Void)? = nil,
        _ body: (LockstepClient) async throws -> T
    ) async throws -> T {
        let pending = Pending()
        let (events, sink) = AsyncStream<Event>.makeStream()
        let channel: NIOAsyncChannel<LineFrame, ByteBuffer>
        do {
            channel = try await ClientBootstrap(group: group).connect(unixDomainSocketPath: socketPath) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineFrameDecoder(maxLineBytes: 16 * 1024 * 1024)))
                    try channel.pipeline.syncOperations.addHandler(LineRouter { Self.route($0, pending: pending, events: sink, onEvent: onEvent) })
                    return try NIOAsyncChannel<LineFrame, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        } catch let error as IOError where error.errnoCode == EACCES {
            throw Failure.permissionDenied(socketPath: socketPath)
        } catch {
            throw Failure.agentNotRunning(socketPath: socketPath)
        }
        return try await channel.executeThenClose { inbound, outbound in
            return try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask {
                    defer {
                        sink.finish()
                        pending.failAll(.disconnected)
                    }
                    // Lines are routed on the event loop (``LineRouter``); this waits for the end.
                    for try await _ in inbound {}
                }
                let client = LockstepClient(outbound: outbound, pending: pending, events: events)
                do {
                    let result = try await body(client)
                    tasks.cancelAll()
                    return result
                } catch {
                    tasks.cancelAll()
                    throw error
                }
            }
        }
    }

    /// Sends a request and waits for its reply's `result`.
    public func request<Result: Decodable & Sendable>(_ type: String, _ params: some Encodable & Sendable = EmptyResult(), as: Result.Type = Result.self) async throws -> Result {
        let id = pending.nextID()
        let line = try PlayerJSON.encode(RequestLine(type: type, requestID: .number(id), params: params))
        let reply: [UInt8] = try await withCheckedThrowingContinuation { continuation in
            pending.add(id, continuation)
            Task { [outbound] in
                do {
                    try await outbound.write(Self.buffer(line))
                } catch {
                    pending.fail(id, .disconnected)
                }
            }
        }
        let decoded: ReplyEnvelope<Result>
        do {
            decoded = try PlayerJSON.decode(ReplyEnvelope<Result>.self, from: reply)
        } catch {
            throw Failure.badReply(error.message)
        }
        if let error = decoded.error { throw Failure.rejected(error) }
        guard decoded.ok, let result = decoded.result else {
            throw Failure.badReply("reply has neither result nor error")
        }
        return result
    }

    /// Sends a request without a `request_id`: no reply comes (for frequent reports).
    public func notify(_ type: String, _ params: some Encodable & Sendable = EmptyResult()) async throws {
        let line = try PlayerJSON.encode(RequestLine(type: type, requestID: nil, params: params))
        do { try await outbound.write(Self.buffer(line)) } catch { throw Failure.disconnected }
    }

    private static func buffer(_ line: [UInt8]) -> ByteBuffer {
        var b = ByteBuffer()
        b.reserveCapacity(line.count + 1)
        b.writeBytes(line)
        b.writeInteger(UInt8(ascii: "\n"))
        return b
    }

    private static func route(_ bytes: [UInt8], pending: Pending, events: AsyncStream<Event>.Continuation, onEvent: (@Sendable (Event) -> Void)?) {
        guard let head = LineHead(scanning: bytes) ?? (try? PlayerJSON.decode(LineHead.self, from: bytes)) else { return }
        if let name = head.event {
            if let onEvent { onEvent(Event(name: name, json: bytes)) } else { events.yield(Event(name: name, json: bytes)) }
        } else if case .number(let id)? = head.requestID {
            pending.resolve(id, bytes)
        }
    }
}

/// The fields that tell a reply from an event.
private struct LineHead: Decodable {
    var event: String?
    var requestID: RequestID?
    enum CodingKeys: String, CodingKey {
        case event
        case requestID = "request_id"
    }

    /// Read without decoding the line (``JSONLineHead``): every event and reply was parsed
    /// twice, and the first parse cost as much as the second. Nil: decode it.
    init?(scanning line: [UInt8]) {
        guard let (event, id) = JSONLineHead.scan(line, "event", "request_id"), let requestID = RequestID.scanned(id) else { return nil }
        switch event {
        case nil, .null?: self.event = nil
        case .string(let name)?: self.event = name
        default: return nil
        }
        self.requestID = requestID
    }
}

private struct ReplyEnvelope<Result: Decodable>: Decodable {
    var ok: Bool
    var result: Result?
    var error: ProtocolError?
}

/// A request line: the parameters' fields with `type` and `request_id` added.
struct RequestLine<Params: Encodable>: Encodable {
    var type: String
    var requestID: RequestID?
    var params: Params

    enum CodingKeys: String, CodingKey {
        case type
        case requestID = "request_id"
    }

    func encode(to encoder: any Encoder) throws {
        try params.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(type, forKey: .type)
        try c.encodeIfPresent(requestID, forKey: .requestID)
    }
}

/// Replies awaited, by request id.
final class Pending: Sendable {
    private struct State {
        var next: Int64 = 0
        var waiting: [Int64: CheckedContinuation<[UInt8], any Error>] = [:]
        var closed = false
    }

    private let state = Mutex(State())

    func nextID() -> Int64 {
        state.withLock { s in
            s.next += 1
            return s.next
        }
    }

    func add(_ id: Int64, _ c: CheckedContinuation<[UInt8], any Error>) {
        let closed = state.withLock { s in
            if s.closed { return true }
            s.waiting[id] = c
            return false
        }
        if closed { c.resume(throwing: LockstepClient.Failure.disconnected) }
    }

    func resolve(_ id: Int64, _ bytes: [UInt8]) {
        state.withLock { $0.waiting.removeValue(forKey: id) }?.resume(returning: bytes)
    }

    func fail(_ id: Int64, _ error: LockstepClient.Failure) {
        state.withLock { $0.waiting.removeValue(forKey: id) }?.resume(throwing: error)
    }

    func failAll(_ error: LockstepClient.Failure) {
        let all = state.withLock { s in
            s.closed = true
            defer { s.waiting = [:] }
            return Array(s.waiting.values)
        }
        for c in all { c.resume(throwing: error) }
    }
}
