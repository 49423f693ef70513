#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging
import LockstepPlayerProtocol
import NIOCore
import NIOPosix
import Synchronization

/// The Unix socket players and the CLI talk to: accepts connections, frames lines, hands each
/// line to a ``ClientHandler`` and writes what it answers, in order.
///
/// Bounded everywhere: at most `maxClients` connections, lines of at most
/// ``PlayerProtocol/maxLineBytes``, and at most `maxQueuedLines` replies and events waiting for
/// a client that does not read; past that the client is disconnected, never the agent slowed.
public final class PlayerServer: Sendable {
    public struct Configuration: Sendable {
        public var socketPath: String
        /// File mode of the socket (0600: only this user; 0660 with `socketGroup`).
        public var socketMode: mode_t
        /// Group owning the socket, for `socketMode` 0660.
        public var socketGroup: gid_t?
        public var maxClients: Int
        public var maxQueuedLines: Int

        public init(socketPath: String, socketMode: mode_t = 0o600, socketGroup: gid_t? = nil, maxClients: Int = 64, maxQueuedLines: Int = 1024) {
            self.socketPath = socketPath
            self.socketMode = socketMode
            self.socketGroup = socketGroup
            self.maxClients = maxClients
            self.maxQueuedLines = maxQueuedLines
        }
    }

    private let configuration: Configuration
    private let handler: any ClientHandler
    private let logger: Logger
    private let group: any EventLoopGroup
    private let nextID = Atomic<UInt64>(0)
    private let clients = Atomic<Int>(0)

    public init(configuration: Configuration, handler: any ClientHandler, group: any EventLoopGroup, logger: Logger) {
        self.configuration = configuration
        self.handler = handler
        self.group = group
        self.logger = logger
    }

    /// Binds the socket (the caller holds its ``SocketLock``) and serves until cancelled.
    public func run(onListening: @Sendable () -> Void = {}) async throws {
        let maxLine = PlayerProtocol.maxLineBytes
        let server = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 64)
            .bind(unixDomainSocketPath: configuration.socketPath, cleanupExistingSocketFile: false) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineFrameDecoder(maxLineBytes: maxLine)))
                    return try NIOAsyncChannel<LineFrame, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        if chmod(configuration.socketPath, configuration.socketMode) != 0 {
            logger.warning("cannot set the socket's mode", metadata: ["socket.path": "\(configuration.socketPath)", "error": "\(String(cString: strerror(errno)))"])
        }
        if let gid = configuration.socketGroup, chown(configuration.socketPath, getuid(), gid) != 0 {
            logger.warning("cannot give the socket to its group", metadata: ["socket.path": "\(configuration.socketPath)", "error": "\(String(cString: strerror(errno)))"])
        }
        logger.info("listening for players", metadata: ["socket.path": "\(configuration.socketPath)"])
        onListening()

        try await withThrowingDiscardingTaskGroup { tasks in
            try await server.executeThenClose { inbound in
                for try await connection in inbound {
                    // Counted here, in accept order, so the connection refused is the newest one.
                    let id = nextID.wrappingAdd(1, ordering: .relaxed).newValue
                    let count = clients.wrappingAdd(1, ordering: .relaxed).newValue
                    tasks.addTask {
                        defer { self.clients.wrappingSubtract(1, ordering: .relaxed) }
                        await self.serve(connection, id: id, count: count)
                    }
                }
            }
        }
    }

    private func serve(_ channel: NIOAsyncChannel<LineFrame, ByteBuffer>, id: UInt64, count: Int) async {
        let credentials = await Self.credentials(of: channel.channel)
        var log = logger
        log[metadataKey: "client.id"] = "\(id)"
        if let c = credentials {
            log[metadataKey: "client.pid"] = "\(c.pid)"
            log[metadataKey: "client.uid"] = "\(c.uid)"
        }

        let (lines, queue) = AsyncStream<ByteBuffer>.makeStream(bufferingPolicy: .bufferingOldest(configuration.maxQueuedLines))
        let client = ClientConnection(id: id, credentials: credentials, queue: queue, channel: channel.channel, logger: log)
        if count > configuration.maxClients {
            log.warning("too many clients; refusing one", metadata: ["clients.max": "\(configuration.maxClients)"])
            client.send(error: ProtocolError(.overloaded, "too many clients (at most \(configuration.maxClients))"), requestID: nil)
            queue.finish()
            try? await channel.executeThenClose { _, outbound in
                for await line in lines { try await outbound.write(line) }
            }
            return
        }
        log.debug("client connected")
        await handler.connected(client)
        do {
            try await channel.executeThenClose { inbound, outbound in
                try await withThrowingDiscardingTaskGroup { tasks in
                    tasks.addTask {
                        for await line in lines { try await outbound.write(line) }
                    }
                    defer { queue.finish() }
                    for try await frame in inbound {
                        switch frame {
                        case .line(let bytes):
                            if bytes.isEmpty { continue }
                            await handler.handle(line: bytes, from: client)
                        case .oversized(let n):
                            client.noteBadInput("oversized line")
                            client.send(error: ProtocolError(.oversized, "line of \(n)+ bytes is longer than \(PlayerProtocol.maxLineBytes); dropped"), requestID: nil)
                        }
                        if client.isClosed { break }
                    }
                }
            }
        } catch {
            log.debug("client connection ended with an error", metadata: ["error": "\(error)"])
        }
        await handler.disconnected(client)
        log.debug("client disconnected")
    }

    private static func credentials(of channel: any Channel) async -> ClientConnection.Credentials? {
        #if os(Linux)
        guard let provider = channel as? any SocketOptionProvider else { return nil }
        guard let cred: PeerCredentials = try? await provider.unsafeGetSocketOption(level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED)).get() else { return nil }
        return .init(pid: cred.pid, uid: cred.uid, gid: cred.gid)
        #else
        return nil
        #endif
    }
}

/// `struct ucred` from <sys/socket.h> (hidden from Swift behind _GNU_SOURCE), same layout.
struct PeerCredentials: Sendable {
    var pid: Int32 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0
}

/// What the server hands lines to (the agent).
public protocol ClientHandler: Sendable {
    func connected(_ client: ClientConnection) async
    func handle(line: [UInt8], from client: ClientConnection) async
    func disconnected(_ client: ClientConnection) async
}

/// One client of the player socket, as the agent sees it: an id, who it is, and a bounded,
/// ordered queue of lines to send to it.
public final class ClientConnection: Sendable, Hashable {
    public struct Credentials: Sendable, Equatable {
        public var pid: Int32
        public var uid: UInt32
        public var gid: UInt32
    }

    public let id: UInt64
    public let credentials: Credentials?
    public let logger: Logger
    private let queue: AsyncStream<ByteBuffer>.Continuation
    private let channel: any Channel
    private let closed = Atomic<Bool>(false)
    private let badInput = Atomic<Int>(0)

    init(id: UInt64, credentials: Credentials?, queue: AsyncStream<ByteBuffer>.Continuation, channel: any Channel, logger: Logger) {
        self.id = id
        self.credentials = credentials
        self.queue = queue
        self.channel = channel
        self.logger = logger
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
        if case .dropped = queue.yield(buffer) {
            logger.warning("client is not reading its replies and events; disconnecting it")
            close()
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

    public func close() {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        queue.finish()
        channel.close(promise: nil)
    }

    public static func == (a: ClientConnection, b: ClientConnection) -> Bool { a.id == b.id }
    public func hash(into h: inout Hasher) { h.combine(id) }
}
