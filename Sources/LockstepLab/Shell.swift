#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import LockstepMPV

/// Runs a command and waits for it, with ``PosixSpawn`` and a blocking `waitpid`.
///
/// Foundation's `Process` on Linux sometimes never notices that a child exited when called from
/// a Swift-concurrency thread (seen here: `waitUntilExit` hung with the child a zombie), so the
/// lab does without it. Output goes to temporary files, not pipes: a command that leaves a
/// daemon behind holding its output must not block the caller.
public enum Shell {
    public struct Result: Sendable {
        public var status: Int32
        public var stdout: String
        public var stderr: String
    }

    public static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws -> Result {
        let tag = "\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let outPath = "/tmp/.lockstep-shell-\(tag).out", errPath = "/tmp/.lockstep-shell-\(tag).err"
        defer {
            unlink(outPath)
            unlink(errPath)
        }
        let pid: pid_t
        do {
            pid = try PosixSpawn.spawn(
                [executable] + arguments, environment: environment ?? ProcessInfo.processInfo.environment,
                stdout: outPath, stderr: errPath)
        } catch {
            throw Lab.Failure(description: "cannot run \(executable): \(error)")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let exit = PosixSpawn.exitStatus(status)
        let out = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
        let err = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
        return Result(status: exit, stdout: out, stderr: err)
    }
}
