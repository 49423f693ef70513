#if canImport(Glibc)
import Glibc
#endif
import LockstepPlayerProtocol

/// The fault helpers' way to send: one UDP socket, datagrams to IPv4 addresses, paced.
final class UDPSender {
    private let fd: Int32

    init() throws {
        fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw UDPSenderError(message: "cannot open a UDP socket (errno \(errno))") }
    }

    deinit { close(fd) }

    /// An IPv4 address and port as `sendto(2)` takes it.
    static func address(_ host: String, _ port: UInt16) throws -> sockaddr_in {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &addr.sin_addr) == 1 else { throw UDPSenderError(message: "not an IPv4 address: \(host)") }
        return addr
    }

    func send(_ datagram: [UInt8], to target: sockaddr_in) {
        var addr = target
        _ = datagram.withUnsafeBytes { b in
            withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, b.baseAddress, b.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        }
    }

    /// Bytes of the datagrams waiting to be read (reads them all, never blocks).
    func drain() -> Int {
        var total = 0
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if n <= 0 { return total }
            total += n
        }
    }

    /// Calls `send(n)` for n = 0, 1, … at `rate` a second for `seconds`, catching up after each
    /// nap of `napMicros`; returns how many it sent.
    static func paced(rate: Int, seconds: Double, napMicros: UInt32, _ send: (Int) -> Void) -> Int {
        let start = MonotonicClock.read()
        let end = start + Int64(seconds * 1e9)
        var sent = 0
        while true {
            let now = MonotonicClock.read()
            if now >= end { break }
            let due = Int(Double(now - start) * Double(rate) / 1e9)
            while sent < due {
                send(sent)
                sent += 1
            }
            usleep(napMicros)
        }
        return sent
    }
}

struct UDPSenderError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
