#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Starts a program with `posix_spawnp` in a clean signal state: ``MPVProcess`` and the lab's
/// `Shell` start their children this way.
///
/// Not Foundation's `Process`: on Linux it sometimes never notices that a child exited when
/// called from a Swift-concurrency thread (seen here: `waitUntilExit` hung with the child a
/// zombie). The caller reaps the child with `waitpid`.
public enum PosixSpawn {
    /// `posix_spawnp` failed: `code` is its error number.
    public struct Failure: Error, CustomStringConvertible {
        public let code: Int32
        public var description: String { String(cString: strerror(code)) }
    }

    /// Starts `arguments[0]` (looked up on PATH unless it holds a slash) with `arguments` and
    /// `environment`. Standard input is /dev/null; standard output and error go to the files
    /// given (created or truncated, mode 0600), else to /dev/null. Returns the child's pid.
    public static func spawn(
        _ arguments: [String], environment: [String: String], stdout: String? = nil, stderr: String? = nil
    ) throws(Failure) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        for (fd, path) in [(Int32(1), stdout), (2, stderr)] {
            if let path {
                posix_spawn_file_actions_addopen(&actions, fd, path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            } else {
                posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", O_WRONLY, 0)
            }
        }
        // A clean signal state: threads of the caller may block or ignore signals, and a child
        // that inherits that (posix_spawn keeps the mask) would not stop on SIGTERM.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for sig in [SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD, SIGUSR1, SIGUSR2] { sigaddset(&defaults, sig) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let env = environment.map { "\($0.key)=\($0.value)" }
        var pid: pid_t = 0
        let result = withCStrings(arguments) { cArgv in
            withCStrings(env) { cEnv in
                posix_spawnp(&pid, arguments[0], &actions, &attributes, cArgv, cEnv)
            }
        }
        guard result == 0 else { throw Failure(code: result) }
        return pid
    }

    /// The exit status in a `waitpid` status: the child's exit code, or 128 + the signal that
    /// ended it (as shells say it).
    public static func exitStatus(_ waitStatus: Int32) -> Int32 {
        (waitStatus & 0x7f) == 0 ? (waitStatus >> 8) & 0xff : 128 + (waitStatus & 0x7f)
    }

    private static func withCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
        var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
        pointers.append(nil)
        defer { for p in pointers { free(p) } }
        return body(pointers)
    }
}
