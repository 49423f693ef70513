import Foundation
import LockstepCore
import LockstepPlayerProtocol
import LockstepTestKit
import Logging
import NIOCore
import NIOEmbedded
import NIOPosix
import Synchronization
import Testing

@testable import LockstepAgent

/// Review findings M8 and L8: the socket's directory and lock file, who may manage the agent,
/// and the limits a local client cannot get past.
@Suite("Player socket access", .serialized)
struct SocketAccessTests {
    @Test("a socket directory owned by another user, with the lock file a symlink, is refused and the symlink's target untouched")
    func foreignDirectoryRefused() async throws {
        try await withTemporaryDirectory { dir in
            let victim = dir + "/victim"
            try "precious\n".write(toFile: victim, atomically: false, encoding: .utf8)
            let foreign = dir + "/lockstep-1000"
            #expect(mkdir(foreign, 0o755) == 0)
            #expect(symlink(victim, foreign + "/agent.sock.lock") == 0)
            #expect(chown(foreign, 65534, 65534) == 0)
            #expect {
                try SocketLock.acquire(socketPath: foreign + "/agent.sock")
            } throws: { error in
                let text = "\(error)"
                return text.contains("belongs to uid 65534") && text.contains(foreign) && !text.contains("\n")
            }
            #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious\n")
        }
    }

    @Test("a symlinked lock file in our own directory is refused, its target untouched")
    func symlinkedLockRefused() async throws {
        try await withTemporaryDirectory { dir in
            let victim = dir + "/victim"
            try "precious\n".write(toFile: victim, atomically: false, encoding: .utf8)
            #expect(mkdir(dir + "/s", 0o700) == 0)
            #expect(symlink(victim, dir + "/s/agent.sock.lock") == 0)
            #expect(throws: SocketDirectory.Unsafe.self) { try SocketLock.acquire(socketPath: dir + "/s/agent.sock") }
            #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious\n")
        }
    }

    @Test("a directory others may write (not sticky) or a symlinked one is refused; a missing one is created 0700")
    func directoryModes() async throws {
        try await withTemporaryDirectory { dir in
            #expect(mkdir(dir + "/open", 0o700) == 0)
            #expect(chmod(dir + "/open", 0o777) == 0)
            #expect(throws: SocketDirectory.Unsafe.self) { try SocketLock.acquire(socketPath: dir + "/open/agent.sock") }
            #expect(symlink(dir + "/open", dir + "/link") == 0)
            #expect(throws: SocketDirectory.Unsafe.self) { try SocketLock.acquire(socketPath: dir + "/link/agent.sock") }
            let lock = try SocketLock.acquire(socketPath: dir + "/new/agent.sock")
            defer { lock.release() }
            var st = stat()
            #expect(lstat(dir + "/new", &st) == 0)
            #expect(st.st_mode & 0o7777 == 0o700)
        }
    }

    @Test("a client of another user (through the socket's group) may play but not read or change the group")
    func otherUserCannotManage() async throws {
        try await withTemporaryDirectory { dir in
            let h = try AgentLogicTests.Harness(dir: dir)
            let (stream, queue) = AsyncStream<ByteBuffer>.makeStream(bufferingPolicy: .bufferingOldest(1024))
            let stranger = ClientConnection(
                id: 9, credentials: .init(pid: 1, uid: getuid() + 1000, gid: 1000), queue: queue, channel: EmbeddedChannel(),
                logger: Logger(label: "client", factory: { _ in SwiftLogNoOpLogHandler() }))
            await h.agent.connected(stranger)
            var lines = stream.makeAsyncIterator()
            await h.send("{\"type\":\"group_show\",\"request_id\":1,\"reveal\":true}", from: stranger)
            let show = await AgentLogicTests.next(&lines)
            #expect(show["ok"] as? Bool == false)
            #expect(!"\(show)".contains("join"))
            await h.send("{\"type\":\"group_join\",\"request_id\":2,\"code\":\"x\"}", from: stranger)
            #expect(await AgentLogicTests.next(&lines)["ok"] as? Bool == false)
            await h.send("{\"type\":\"status\",\"request_id\":3}", from: stranger)
            #expect(await AgentLogicTests.next(&lines)["ok"] as? Bool == true)
            // The agent's own user may.
            let (me, _) = await h.connect(id: 10)
            #expect(me.mayManage)
        }
    }

    @Test("a client that sends nothing is closed after the first-line timeout (another user's, or any with the test switch)")
    func silentClientClosed() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/agent.sock"
            let lock = try SocketLock.acquire(socketPath: path)
            defer { lock.release() }
            let task = await listening(on: path, handler: Silent()) {
                $0.firstLineTimeoutSeconds = 1
                $0.firstLineTimeoutForOwnUser = true
            }
            defer { task.cancel() }
            let silent = try RawSocket(path: path)
            let speaking = try RawSocket(path: path)
            speaking.write("{}\n")
            #expect(await silent.isClosedByPeer(timeout: 5))
            #expect(!(await speaking.isClosedByPeer(timeout: 0.2)))
        }
    }

    @Test("clients connecting while the server stops are closed, not dropped (NIO traps on a dropped connection)")
    func connectingWhileStopping() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/agent.sock"
            let lock = try SocketLock.acquire(socketPath: path)
            defer { lock.release() }
            for _ in 0..<20 {
                let task = await listening(on: path, handler: Silent())
                // A burst of connections, and the server stopped in the middle of it.
                let clients = (0..<16).compactMap { _ in try? RawSocket(path: path) }
                task.cancel()
                _ = await task.result
                #expect(!clients.isEmpty)
                for client in clients { #expect(await client.isClosedByPeer(timeout: 5)) }
                unlink(path)
            }
        }
    }

    @Test("a client's lines reach the handler in order; while many wait unhandled the socket is not read, and reading resumes as they are handled")
    func unhandledLinesStopReading() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/agent.sock"
            let lock = try SocketLock.acquire(socketPath: path)
            defer { lock.release() }
            let holding = Holding()
            let task = await listening(on: path, handler: holding)
            defer { task.cancel() }
            // 2,000 lines of 1 KiB, written by a thread that blocks while the socket is full.
            let count = 2000
            let client = try RawSocket(path: path)
            let fd = client.fd
            let written = Holding.Flag()
            Thread.detachNewThread {
                for i in 0..<count {
                    let line = Array((String(format: "%04d", i) + String(repeating: "x", count: 1019) + "\n").utf8)
                    var sent = 0
                    while sent < line.count {
                        let n = line[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                        if n <= 0 { return }
                        sent += n
                    }
                }
                written.value.store(true, ordering: .relaxed)
            }
            #expect(await eventually(timeout: 10) { holding.lines.count >= ClientLines.maxWaiting })
            try await Task.sleep(nanoseconds: 300_000_000)
            // At most the lines waiting and one read's worth (64 KiB): the rest stay in the kernel.
            let heldAt = holding.lines.count
            #expect(heldAt < ClientLines.maxWaiting + 80)
            let allWritten = written.value.load(ordering: .relaxed)
            #expect(!allWritten)
            #expect(await eventually(timeout: 20) {
                holding.release()
                return holding.lines.count == count
            })
            #expect(holding.lines.map { Int($0.prefix(4)) } == (0..<count).map { $0 })
            #expect(holding.lines.allSatisfy { $0.count == 1023 })
        }
    }

    @Test("a client with more than its byte budget queued is disconnected")
    func byteBudget() {
        let (_, queue) = AsyncStream<ByteBuffer>.makeStream(bufferingPolicy: .bufferingOldest(1024))
        let c = ClientConnection(
            id: 1, credentials: nil, queue: queue, channel: EmbeddedChannel(), logger: Logger(label: "c", factory: { _ in SwiftLogNoOpLogHandler() }),
            maxQueuedBytes: 10_000)
        let line = [UInt8](repeating: UInt8(ascii: "a"), count: 999)
        for _ in 0..<10 { c.send(line) }
        #expect(!c.isClosed)
        c.send(line)
        #expect(c.isClosed)
    }
}

/// A server of `handler` on `path` (the caller holds its lock), listening when this returns;
/// cancelling the task stops it.
private func listening(
    on path: String, handler: any ClientHandler, configure: (inout PlayerServer.Configuration) -> Void = { _ in }
) async -> Task<Void, any Error> {
    var configuration = PlayerServer.Configuration(socketPath: path)
    configure(&configuration)
    let server = PlayerServer(
        configuration: configuration, handler: handler, group: MultiThreadedEventLoopGroup.singleton,
        logger: Logger(label: "t", factory: { _ in SwiftLogNoOpLogHandler() }))
    let listening = AsyncStream<Void>.makeStream()
    let task = Task { try await server.run { listening.continuation.yield() } }
    var it = listening.stream.makeAsyncIterator()
    _ = await it.next()
    return task
}

/// Whether `condition` holds within `timeout` seconds, looking every 10 ms.
private func eventually(timeout: Double, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(nanoseconds: 10_000_000)
    }
    return condition()
}

/// A handler that keeps each line and does not finish handling it until ``release()``.
final class Holding: ClientHandler {
    final class Flag: Sendable { let value = Atomic<Bool>(false) }

    private let state = Mutex<(lines: [String], unfinished: [@Sendable () -> Void])>(([], []))

    func connected(_ client: ClientConnection) async {}
    func disconnected(_ client: ClientConnection) async {}

    func receive(line: [UInt8], from client: ClientConnection, done: @escaping @Sendable () -> Void) {
        state.withLock {
            $0.lines.append(String(decoding: line, as: UTF8.self))
            $0.unfinished.append(done)
        }
    }

    var lines: [String] { state.withLock { $0.lines } }

    /// Finishes every line received so far.
    func release() {
        let finish = state.withLock { s in
            defer { s.unfinished = [] }
            return s.unfinished
        }
        for done in finish { done() }
    }
}

/// A handler that does nothing.
struct Silent: ClientHandler {
    func connected(_ client: ClientConnection) async {}
    func receive(line: [UInt8], from client: ClientConnection, done: @escaping @Sendable () -> Void) { done() }
    func disconnected(_ client: ClientConnection) async {}
}
