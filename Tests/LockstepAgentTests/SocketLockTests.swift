import Foundation
import LockstepTestKit
import Testing

@testable import LockstepAgent

@Suite("Socket ownership")
struct SocketLockTests {
    @Test("a second agent on the same socket is refused with a one-line error naming the first's pid")
    func secondAgentRefused() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/agent.sock"
            let first = try SocketLock.acquire(socketPath: path)
            defer { first.release() }
            #expect {
                try SocketLock.acquire(socketPath: path)
            } throws: { error in
                let text = (error as? SocketLock.Conflict)?.description ?? ""
                return text.contains("pid \(getpid())") && text.contains(path) && !text.contains("\n")
            }
        }
    }

    @Test("a socket left by a crashed agent is replaced")
    func staleSocketReplaced() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/agent.sock"
            // A bound socket whose owner is gone: the file stays, nothing listens.
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            var addr = sockaddr_un()
            addr.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &addr.sun_path) { raw in
                for (i, b) in path.utf8.enumerated() { raw[i] = b }
            }
            let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
            #expect(bound == 0)
            close(fd)
            #expect(FileManager.default.fileExists(atPath: path))
            let lock = try SocketLock.acquire(socketPath: path)
            #expect(!FileManager.default.fileExists(atPath: path))
            lock.release()
            #expect(!FileManager.default.fileExists(atPath: path + ".lock"))
        }
    }

    @Test("a regular file at the socket path is never deleted")
    func regularFileKept() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/agent.sock"
            try "precious".write(toFile: path, atomically: true, encoding: .utf8)
            #expect(throws: SocketLock.Conflict.self) { try SocketLock.acquire(socketPath: path) }
            #expect(try String(contentsOfFile: path, encoding: .utf8) == "precious")
        }
    }
}
