#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// The process's umask narrowed to owner-only while a socket is bound, so the socket is never
/// wider than its owner's before it is given its mode. The umask is one per process: two
/// servers binding at once (tests run several agents in one process) must not each save and
/// restore it, or the later restore leaves the narrowed (or another caller's) mask in place for
/// good. The first holder saves it, the last one out restores it.
enum PrivateUmask {
    private static let state = Mutex<(holders: Int, saved: mode_t)>((0, 0))

    /// Narrows the umask to 0177 until the matching ``release()``.
    static func acquire() {
        state.withLock { s in
            if s.holders == 0 { s.saved = umask(0o177) }
            s.holders += 1
        }
    }

    /// Ends one ``acquire()``; the last one restores the umask saved by the first.
    static func release() {
        state.withLock { s in
            s.holders -= 1
            if s.holders == 0 { umask(s.saved) }
        }
    }
}
