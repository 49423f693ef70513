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

/// The Unix socket players and the CLI talk to: accepts connections (``UnixListener``), frames
/// lines, hands each line to a ``ClientHandler`` and writes what it answers, in order (straight
/// into the socket from the answering thread while it takes them: ``DirectLineWriter``).
///
/// Bounded everywhere: at most `maxClients` connections (`maxClientsPerOtherUser` for each user
/// other than the agent's), lines of at most ``PlayerProtocol/maxLineBytes``, at most
/// `maxQueuedLines` replies and events (and `maxQueuedBytes`) waiting for a client that does not
/// read; past that the client is disconnected, never the agent slowed. A client of another user
/// that sends nothing within `firstLineTimeoutSeconds` is closed.
public final class PlayerServer: Sendable {
    public struct Configuration: Sendable {
        public var socketPath: String
        /// File mode of the socket (0600: only this user; 0660 with `socketGroup`).
        public var socketMode: mode_t
        /// Group owning the socket, for `socketMode` 0660.
        public var socketGroup: gid_t?
        public var maxClients: Int
        /// Connections of one user other than the agent's own, at most (so another user of the
        /// socket's group cannot take every slot).
        public var maxClientsPerOtherUser: Int
        public var maxQueuedLines: Int
        /// Bytes waiting for one client, at most (a subscriber that never reads).
        public var maxQueuedBytes: Int
        /// A client of another user that has not sent a whole line this long after connecting is
        /// closed (the agent's own user's clients may connect first and ask later).
        public var firstLineTimeoutSeconds: Int64
        /// Whether the first-line timeout applies to the agent's own user too (tests).
        public var firstLineTimeoutForOwnUser: Bool

        public init(
            socketPath: String, socketMode: mode_t = 0o600, socketGroup: gid_t? = nil, maxClients: Int = 64, maxClientsPerOtherUser: Int = 16,
            maxQueuedLines: Int = 1024, maxQueuedBytes: Int = 4 << 20, firstLineTimeoutSeconds: Int64 = 10, firstLineTimeoutForOwnUser: Bool = false
        ) {
            self.socketPath = socketPath
            self.socketMode = socketMode
            self.socketGroup = socketGroup
            self.maxClients = maxClients
            self.maxClientsPerOtherUser = maxClientsPerOtherUser
            self.maxQueuedLines = maxQueuedLines
            self.maxQueuedBytes = maxQueuedBytes
            self.firstLineTimeoutSeconds = firstLineTimeoutSeconds
            self.firstLineTimeoutForOwnUser = firstLineTimeoutForOwnUser
        }
    }

    private let configuration: Configuration
    private let handler: any ClientHandler
    private let logger: Logger
    private let group: any EventLoopGroup
    private let nextID = Atomic<UInt64>(0)
    private let clients = Atomic<Int>(0)
    /// Connections per user other than the agent's.
    private let perUser = Mutex<[UInt32: Int]>([:])

    public init(configuration: Configuration, handler: any ClientHandler, group: any EventLoopGroup, logger: Logger) {
        self.configuration = configuration
        self.handler = handler
        self.group = group
        self.logger = logger
    }

    /// Binds the socket (the caller holds its ``SocketLock``) and serves until cancelled.
    public func run(onListening: @Sendable () -> Void = {}) async throws {
        // The socket is created private (umask), and only then given its mode: no one can
        // connect in between.
        PrivateUmask.acquire()
        let made = Result { try UnixListener(path: configuration.socketPath, backlog: 64, logger: logger) }
        PrivateUmask.release()
        let listener = try made.get()
        defer { listener.stop() }
        if chmod(configuration.socketPath, configuration.socketMode) != 0 {
            logger.warning("cannot set the socket's mode", metadata: ["socket.path": "\(configuration.socketPath)", "error": "\(String(cString: strerror(errno)))"])
        }
        if let gid = configuration.socketGroup, chown(configuration.socketPath, getuid(), gid) != 0 {
            logger.warning("cannot give the socket to its group", metadata: ["socket.path": "\(configuration.socketPath)", "error": "\(String(cString: strerror(errno)))"])
        }
        try listener.start()
        logger.info("listening for players", metadata: ["socket.path": "\(configuration.socketPath)"])
        onListening()
        try await serve(listener)
    }

    private func serve(_ listener: UnixListener) async throws {
        try await withThrowingDiscardingTaskGroup { tasks in
            // Cancelling the server ends the wait for the next connection; the connections'
            // tasks end with it (the group cancels them).
            await withTaskCancellationHandler {
                while let fd = await listener.next() {
                    guard let connection = await open(fd) else { continue }
                    // Counted here, in accept order, so the connection refused is the newest one.
                    let id = nextID.wrappingAdd(1, ordering: .relaxed).newValue
                    let count = clients.wrappingAdd(1, ordering: .relaxed).newValue
                    tasks.addTask {
                        defer { self.clients.wrappingSubtract(1, ordering: .relaxed) }
                        await self.serve(connection.channel, writer: connection.writer, id: id, count: count)
                    }
                }
            } onCancel: {
                listener.stop()
            }
        }
    }

    /// The accepted connection `fd` as a channel (which owns `fd` from here on) and a writer on
    /// a duplicate of it (through the channel alone if it cannot be duplicated); nil if NIO does
    /// not take it (it closes `fd` then).
    private func open(_ fd: Int32) async -> (channel: NIOAsyncChannel<LineFrame, ByteBuffer>, writer: DirectLineWriter)? {
        let writer = DirectLineWriter(duplicating: fd) ?? DirectLineWriter()
        let maxLine = PlayerProtocol.maxLineBytes
        do {
            let channel = try await ClientBootstrap(group: group)
                // One read (at most 64 KiB) per readable event: ``ClientLines`` holds reads while too
                // many lines wait, and NIO's default of four reads an event let up to 256 KiB past it.
                .channelOption(.maxMessagesPerRead, value: 1)
                .withConnectedSocket(fd) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineFrameDecoder(maxLineBytes: maxLine)))
                        try channel.pipeline.syncOperations.addHandler(ClientLines(handler: self.handler))
                        return try NIOAsyncChannel<LineFrame, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
            return (channel, writer)
        } catch {
            writer.close()
            logger.warning("cannot serve a player connection", metadata: ["error": "\(error)"])
            return nil
        }
    }

    private func serve(_ channel: NIOAsyncChannel<LineFrame, ByteBuffer>, writer: DirectLineWriter, id: UInt64, count: Int) async {
        let credentials = await Self.credentials(of: channel.channel)
        var log = logger
        log[metadataKey: "client.id"] = "\(id)"
        if let c = credentials {
            log[metadataKey: "client.pid"] = "\(c.pid)"
            log[metadataKey: "client.uid"] = "\(c.uid)"
        }

        let client = ClientConnection(
            id: id, credentials: credentials, channel: channel.channel, writer: writer, logger: log,
            maxQueuedLines: configuration.maxQueuedLines, maxQueuedBytes: configuration.maxQueuedBytes)
        let otherUser = credentials.map { $0.uid != getuid() } ?? false ? credentials?.uid : nil
        let fromThatUser = otherUser.map { uid in perUser.withLock { $0[uid, default: 0] += 1; return $0[uid]! } } ?? 0
        defer { if let uid = otherUser { perUser.withLock { $0[uid, default: 1] -= 1; if $0[uid] == 0 { $0[uid] = nil } } } }
        if count > configuration.maxClients || fromThatUser > configuration.maxClientsPerOtherUser {
            let limit = count > configuration.maxClients ? "at most \(configuration.maxClients)" : "at most \(configuration.maxClientsPerOtherUser) per user"
            log.warning("too many clients; refusing one", metadata: ["clients.max": "\(configuration.maxClients)", "clients.per_other_user": "\(configuration.maxClientsPerOtherUser)"])
            client.send(error: ProtocolError(.overloaded, "too many clients (\(limit))"), requestID: nil)
            client.close()
            try? await channel.executeThenClose { _, _ in }
            return
        }
        log.debug("client connected")
        await handler.connected(client)
        // Lines go to the handler from here on (``ClientLines``); none reaches `inbound`.
        let attached: Void? = try? await channel.channel.eventLoop.submit {
            try channel.channel.pipeline.syncOperations.handler(type: ClientLines.self).attach(client)
        }.get()
        if attached == nil { client.close() }
        // A client that never says anything must not hold a slot for ever.
        let timeout = configuration.firstLineTimeoutSeconds
        let watched = otherUser != nil || configuration.firstLineTimeoutForOwnUser
        let watchdog = Task {
            guard watched else { return }
            try? await Task.sleep(nanoseconds: UInt64(max(0, timeout)) * 1_000_000_000)
            if !Task.isCancelled && !client.hasSpoken {
                client.logger.notice("client sent nothing; closing it", metadata: ["client.timeout_s": "\(timeout)"])
                client.close()
            }
        }
        defer { watchdog.cancel() }
        do {
            // Lines in and out bypass the async channel (``ClientLines``, ``ClientConnection``):
            // its inbound stream only ends when the connection does.
            try await channel.executeThenClose { inbound, _ in
                for try await _ in inbound {}
            }
        } catch {
            log.debug("client connection ended with an error", metadata: ["error": "\(error)"])
        }
        await handler.disconnected(client)
        // The writer's duplicate too: the socket is closed only once both are.
        client.close()
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
    /// Handles `line` from `client`, after the lines before it, and then calls `done` (from any
    /// thread). Called on the connection's event loop: this must not block.
    func receive(line: [UInt8], from client: ClientConnection, done: @escaping @Sendable () -> Void)
    func disconnected(_ client: ClientConnection) async
}
