#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CLockstepPosix
import Logging
import Synchronization

/// The player socket's listening end, accepted on a thread of its own.
///
/// The server accepts rather than NIO so that it holds each connection's descriptor: the agent
/// writes its lines to a player straight from its own thread (``DirectLineWriter``), where NIO's
/// event loop would be one more thread woken for every line (docs/scale.md, twenty-seventh step).
/// The connection is then handed to NIO for reading.
///
/// Accepted descriptors wait in ``next()`` until the server claims one; those never claimed are
/// closed by ``stop()``, so no connection is left open behind a stopped server.
final class UnixListener: Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private let fd: Int32
    private let path: String
    /// The socket file as bound (device, inode; bit patterns: `dev_t` is signed on Apple's
    /// systems): removed at ``stop()`` only if still this one.
    private let file: (device: UInt64, inode: UInt64)?
    private let wake: (read: Int32, write: Int32)
    private let logger: Logger
    /// Accepted and not yet claimed, and whether ``stop()`` came.
    private let pending = Mutex<(stopped: Bool, fds: Set<Int32>)>((false, []))
    private let accepted: AsyncStream<Int32>
    private let handOver: AsyncStream<Int32>.Continuation

    /// Binds `path` (which must not exist) and listens. The caller sets the umask the socket is
    /// created with (``PrivateUmask``).
    init(path: String, backlog: Int32, logger: Logger) throws {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else { throw Failure(description: "socket path \(path) is longer than \(capacity - 1) bytes") }
        withUnsafeMutableBytes(of: &address.sun_path) { dst in
            dst.copyBytes(from: bytes)
            dst[bytes.count] = 0
        }
        #if canImport(Glibc)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
        let fd = socket(AF_UNIX, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw Failure(description: "cannot create a Unix socket: \(String(cString: strerror(errno)))") }
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        guard bound == 0, listen(fd, backlog) == 0 else {
            let e = errno
            close(fd)
            throw Failure(description: "cannot listen on \(path): \(String(cString: strerror(e)))")
        }
        var status = stat()
        file = stat(path, &status) == 0 ? (UInt64(truncatingIfNeeded: status.st_dev), UInt64(truncatingIfNeeded: status.st_ino)) : nil
        // Not blocking: a connection that went away between poll and accept is no reason to stall.
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            let e = errno
            close(fd)
            throw Failure(description: "cannot create the listener's wake-up pipe: \(String(cString: strerror(e)))")
        }
        for p in fds { _ = fcntl(p, F_SETFD, FD_CLOEXEC) }
        self.fd = fd
        self.path = path
        self.wake = (fds[0], fds[1])
        self.logger = logger
        (accepted, handOver) = AsyncStream<Int32>.makeStream()
    }

    deinit {
        close(fd)
        close(wake.read)
        close(wake.write)
    }

    /// Starts accepting, until ``stop()`` (the thread holds the listener until then).
    func start() throws {
        guard let t = JoinableThread.start({ [self] in acceptLoop() }) else { throw Failure(description: "cannot start the player socket's accept thread") }
        JoinableThread.detach(t)
    }

    /// The next accepted connection, now the caller's to close; nil once stopped.
    func next() async -> Int32? {
        for await fd in accepted {
            let claimed = pending.withLock { $0.fds.remove(fd) != nil }
            if claimed { return fd }
        }
        return nil
    }

    /// Stops accepting, removes the socket file (if it is still this socket's: an agent that
    /// starts again binds the same path) and closes what was accepted and not claimed. Safe to
    /// call twice.
    func stop() {
        let left: Set<Int32>? = pending.withLock { state in
            guard !state.stopped else { return nil }
            state.stopped = true
            defer { state.fds = [] }
            return state.fds
        }
        guard let left else { return }
        var now = stat()
        if let file, stat(path, &now) == 0, now.st_mode & S_IFMT == S_IFSOCK, UInt64(truncatingIfNeeded: now.st_dev) == file.device, UInt64(truncatingIfNeeded: now.st_ino) == file.inode {
            unlink(path)
        }
        for fd in left { close(fd) }
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
        handOver.finish()
    }

    private func acceptLoop() {
        lockstep_name_thread("lockstep-accept")
        var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
        // After running out of descriptors, the backlog is left alone a while (the listening
        // socket stays readable: accepting again at once would spin).
        var pause: Int64 = -1
        while true {
            fds[0].revents = 0
            fds[1].revents = 0
            if pause > 0 { fds[0].fd = -1 }
            let ready = lockstep_poll_ns(&fds, UInt32(fds.count), pause)
            if fds[1].revents != 0 { return }
            if pause > 0 {
                pause = -1
                fds[0].fd = fd
                if ready == 0 { continue }
            }
            let client = lockstep_accept_cloexec(fd)
            if client >= 0 {
                let kept = pending.withLock { state -> Bool in
                    guard !state.stopped else { return false }
                    state.fds.insert(client)
                    return true
                }
                guard kept else {
                    close(client)
                    return
                }
                handOver.yield(client)
                continue
            }
            switch errno {
            case EAGAIN, EWOULDBLOCK, EINTR, ECONNABORTED:
                continue
            default:
                logger.warning("cannot accept a player connection; trying again in 0.1 s", metadata: ["error": "\(String(cString: strerror(errno)))"])
                pause = 100_000_000
            }
        }
    }
}
