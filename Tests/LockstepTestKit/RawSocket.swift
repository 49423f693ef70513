#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A bare Unix-socket client for tests of bad behaviour: it writes what it is told, reads only
/// when asked, and can vanish mid-line.
public final class RawSocket {
    public let fd: Int32

    public init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in path.utf8.enumerated() { raw[i] = b }
        }
        let r = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        guard r == 0 else {
            close(fd)
            throw POSIXError(.ECONNREFUSED)
        }
    }

    deinit { close(fd) }

    /// Writes without blocking for long: a full socket buffer (an agent that stopped reading) ends the write.
    public func write(_ text: String) {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            if n <= 0 { return }
            sent += n
        }
    }

    /// Reads lines until `count` arrived or `timeout` seconds passed. Never blocks a thread:
    /// the agent under test runs on the same cooperative pool. The timeout is only an upper
    /// bound (a passing test never waits for it), and whatever arrived is read once more after
    /// it: a task starved by other tests' CPU-bound work still sees what the agent sent.
    public func readLines(_ count: Int, timeout: Double = 20) async -> [String] {
        var lines: [String] = []
        var buffer: [UInt8] = []
        let deadline = Date().addingTimeInterval(timeout)
        var lastLook = false
        while lines.count < count && !lastLook {
            lastLook = Date() >= deadline
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 0) > 0 else {
                if !lastLook { try? await Task.sleep(nanoseconds: 5_000_000) }
                continue
            }
            lastLook = false
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = recv(fd, &chunk, chunk.count, 0)
            if n <= 0 { break }
            buffer += chunk[0..<n]
            while let nl = buffer.firstIndex(of: 10) {
                lines.append(String(decoding: buffer[..<nl], as: UTF8.self))
                buffer.removeSubrange(...nl)
            }
        }
        return lines
    }

    /// True once the agent closed the connection (reads drain anything pending first).
    public func isClosedByPeer(timeout: Double = 20) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        var lastLook = false
        while !lastLook {
            lastLook = Date() >= deadline
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 0) > 0 else {
                if !lastLook { try? await Task.sleep(nanoseconds: 5_000_000) }
                continue
            }
            lastLook = false
            let n = recv(fd, &chunk, chunk.count, 0)
            if n == 0 { return true }
            if n < 0 { return errno == ECONNRESET }
        }
        return false
    }
}
