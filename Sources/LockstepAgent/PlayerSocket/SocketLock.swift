#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Makes sure one agent owns a socket path: an exclusive `flock` on `PATH.lock`, held for the
/// agent's lifetime (the kernel drops it when the process dies, however it dies).
///
/// - Another live agent holds the lock: refuse, naming its PID.
/// - The lock is free but the socket file exists: a crashed agent left it; remove it.
public final class SocketLock: Sendable {
    public let socketPath: String
    private let fd: Int32

    public struct Conflict: Error, CustomStringConvertible {
        public let description: String
    }

    private init(socketPath: String, fd: Int32) {
        self.socketPath = socketPath
        self.fd = fd
    }

    /// Takes the lock for `socketPath`, creating its directory (mode `directoryMode`) if needed
    /// and checking it (``SocketDirectory``), and removes a stale socket file. Throws
    /// ``Conflict`` if another agent is running, ``SocketDirectory/Unsafe`` if the directory or the
    /// lock file is not safely ours.
    public static func acquire(socketPath: String, directoryMode: mode_t = 0o700) throws -> SocketLock {
        let dir = PathNames.parent(of: socketPath)
        try SocketDirectory.prepare(dir.isEmpty ? "." : dir, mode: directoryMode)
        let lockPath = socketPath + ".lock"
        // O_NOFOLLOW: a symlink planted here must not make us truncate its target.
        let fd = open(lockPath, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let e = errno
            if e == ELOOP { throw SocketDirectory.Unsafe(description: "refusing \(lockPath): it is a symbolic link; remove it") }
            throw Conflict(description: "cannot open \(lockPath): \(String(cString: strerror(e)))")
        }
        var lockStat = stat()
        guard fstat(fd, &lockStat) == 0, (lockStat.st_mode & S_IFMT) == S_IFREG, lockStat.st_uid == getuid() else {
            close(fd)
            throw SocketDirectory.Unsafe(description: "refusing \(lockPath): it is not a regular file of this user; remove it")
        }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let holder = (try? String(contentsOfFile: lockPath, encoding: .utf8))?.trimmed() ?? ""
            close(fd)
            let who = holder.isEmpty ? "another lockstepd" : "another lockstepd (pid \(holder))"
            throw Conflict(description: "\(who) is already running on \(socketPath); stop it, or give this one another --socket")
        }
        ftruncate(fd, 0)
        let pid = "\(getpid())\n"
        _ = pid.withCString { write(fd, $0, strlen($0)) }
        // We hold the lock, so a socket file here is a leftover of a crashed agent.
        var st = stat()
        if lstat(socketPath, &st) == 0 {
            if (st.st_mode & S_IFMT) == S_IFSOCK {
                unlink(socketPath)
            } else {
                flock(fd, LOCK_UN)
                close(fd)
                throw Conflict(description: "\(socketPath) exists and is not a socket; refusing to replace it")
            }
        }
        return SocketLock(socketPath: socketPath, fd: fd)
    }

    /// Removes the socket and the lock file, and releases the lock.
    public func release() {
        unlink(socketPath)
        unlink(socketPath + ".lock")
        flock(fd, LOCK_UN)
        close(fd)
    }
}
