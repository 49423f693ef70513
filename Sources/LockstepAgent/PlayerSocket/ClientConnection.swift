#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging
import LockstepPlayerProtocol
import NIOCore
import Synchronization

/// One client of the player socket, as the agent sees it: an id, who it is, and a bounded,
/// ordered queue of lines to send to it.
///
/// A line goes from the thread that sends it (the agent's) straight into the socket
/// (``DirectLineWriter``), and through the channel only when the socket does not take it at
/// once: no thread woken between the agent and the player. Lines used to pass through a stream
/// drained by a task of the concurrency pool and then the channel's event loop, two wake-ups for
/// every reply and event (docs/scale.md, twenty-fourth and twenty-seventh steps).
public final class ClientConnection: Sendable, Hashable {
    public struct Credentials: Sendable, Equatable {
        public var pid: Int32
        public var uid: UInt32
        public var gid: UInt32
    }

    /// Where the lines go.
    private enum Output: Sendable {
        /// The channel's socket, written through `writer` (straight in while it takes the lines).
        case socket(DirectLineWriter)
        /// A stream a test reads, instead of the socket.
        case stream(AsyncStream<ByteBuffer>.Continuation)
    }

    public let id: UInt64
    public let credentials: Credentials?
    public let logger: Logger
    private let output: Output
    private let channel: any Channel
    private let closed = Atomic<Bool>(false)
    private let badInput = Atomic<Int>(0)
    private let spoken = Atomic<Bool>(false)
    /// Lines and bytes sent but not yet taken by the kernel (the socket's).
    private let queuedLines = Atomic<Int>(0)
    private let queuedBytes = Atomic<Int>(0)
    private let maxQueuedLines: Int
    private let maxQueuedBytes: Int

    /// A client whose lines go to its socket through `writer` (default: all through `channel`).
    convenience init(
        id: UInt64, credentials: Credentials?, channel: any Channel, writer: DirectLineWriter = DirectLineWriter(), logger: Logger, maxQueuedLines: Int = 1024,
        maxQueuedBytes: Int = 4 << 20
    ) {
        self.init(id: id, credentials: credentials, output: .socket(writer), channel: channel, logger: logger, maxQueuedLines: maxQueuedLines, maxQueuedBytes: maxQueuedBytes)
    }

    /// A client whose lines go to `queue` (tests read them there; the stream's own buffering
    /// bounds the lines, `maxQueuedBytes` all bytes ever sent).
    convenience init(id: UInt64, credentials: Credentials?, queue: AsyncStream<ByteBuffer>.Continuation, channel: any Channel, logger: Logger, maxQueuedBytes: Int = 4 << 20) {
        self.init(id: id, credentials: credentials, output: .stream(queue), channel: channel, logger: logger, maxQueuedLines: .max, maxQueuedBytes: maxQueuedBytes)
    }

    private init(id: UInt64, credentials: Credentials?, output: Output, channel: any Channel, logger: Logger, maxQueuedLines: Int, maxQueuedBytes: Int) {
        self.id = id
        self.credentials = credentials
        self.output = output
        self.channel = channel
        self.logger = logger
        self.maxQueuedLines = maxQueuedLines
        self.maxQueuedBytes = maxQueuedBytes
    }

    /// Whether the client sent anything yet.
    var hasSpoken: Bool { spoken.load(ordering: .relaxed) }
    func onSpoke() { spoken.store(true, ordering: .relaxed) }

    /// Whether the client may manage the agent (`group_*`, `sim_clock`): its own user or root.
    /// Others reach the socket through its group (`--socket-group`): they may play, not manage.
    public var mayManage: Bool {
        guard let uid = credentials?.uid else { return true }
        return uid == getuid() || uid == 0
    }

    public var isClosed: Bool { closed.load(ordering: .relaxed) }

    /// Queues one line (a newline is added). A client whose queue is full is not reading:
    /// it is disconnected rather than allowed to hold the agent's memory.
    public func send(_ json: [UInt8]) {
        guard !isClosed else { return }
        var buffer = ByteBuffer()
        buffer.reserveCapacity(json.count + 1)
        buffer.writeBytes(json)
        buffer.writeInteger(UInt8(ascii: "\n"))
        let bytes = buffer.readableBytes
        let queued = queuedBytes.wrappingAdd(bytes, ordering: .relaxed).newValue
        let lines = queuedLines.wrappingAdd(1, ordering: .relaxed).newValue
        if queued > maxQueuedBytes || lines > maxQueuedLines {
            logger.warning("client is not reading its replies and events; disconnecting it", metadata: ["client.queued_bytes": "\(queued)", "client.queued_lines": "\(lines)"])
            close()
            return
        }
        switch output {
        case .socket(let writer):
            // Written or failed (the channel closed): either way no longer held for the client.
            writer.write(buffer, channel: channel) {
                self.queuedBytes.wrappingSubtract(bytes, ordering: .relaxed)
                self.queuedLines.wrappingSubtract(1, ordering: .relaxed)
            }
        case .stream(let queue):
            if case .dropped = queue.yield(buffer) {
                logger.warning("client is not reading its replies and events; disconnecting it")
                close()
            }
        }
    }

    public func send(_ value: some Encodable) {
        do {
            send(try PlayerJSON.encode(value))
        } catch {
            logger.error("cannot encode a message for a client", metadata: ["error": "\(error)"])
        }
    }

    public func send(error: ProtocolError, requestID: RequestID?) {
        send(ReplyLine<EmptyResult>(requestID: requestID, ok: false, result: nil, error: error))
    }

    /// Counts a bad line from this client; logs the first few, then every hundredth.
    public func noteBadInput(_ what: String) {
        let n = badInput.wrappingAdd(1, ordering: .relaxed).newValue
        if n <= 3 || n % 100 == 0 {
            logger.notice("bad input from client", metadata: ["input.problem": "\(what)", "input.bad_count": "\(n)"])
        }
    }

    /// Closes the connection; lines sent before go out first if the socket takes them.
    public func close() {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        switch output {
        case .socket(let writer): writer.close()
        case .stream(let queue): queue.finish()
        }
        channel.close(promise: nil)
    }

    public static func == (a: ClientConnection, b: ClientConnection) -> Bool { a.id == b.id }
    public func hash(into h: inout Hasher) { h.combine(id) }
}
