#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Foundation
import LockstepCore
import LockstepPlayerProtocol

/// `lockstep-bench flood`: a stranger on the LAN sending datagrams as fast as asked, for the
/// faults benchmark (run inside a lab host). Half look like Lockstep datagrams from random
/// senders (so the victim must try to authenticate them), half are random bytes.
struct FloodCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "flood", abstract: "Send junk datagrams to HOST:PORT at a given rate (a fault-injection helper).")

    @Option(help: "Target IPv4 address.") var host: String
    @Option(help: "Target UDP port.") var port: UInt16
    @Option(help: "Datagrams per second.") var rate = 50_000
    @Option(help: "Seconds.") var seconds = 10.0

    func run() throws {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        inet_pton(AF_INET, host, &addr.sin_addr)
        var rng = SystemRandomNumberGenerator()
        var packets: [[UInt8]] = []
        for i in 0..<256 {
            var p = (0..<120).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if i % 2 == 0 {
                p[0] = 0x4C
                p[1] = 0x4B
                p[2] = 1
                p[3] = 1
            }
            packets.append(p)
        }
        let start = MonotonicClock.read()
        let end = start + Int64(seconds * 1e9)
        var sent = 0
        while true {
            let now = MonotonicClock.read()
            if now >= end { break }
            let due = Int(Double(now - start) * Double(rate) / 1e9)
            while sent < due {
                let p = packets[sent & 255]
                _ = p.withUnsafeBytes { b in
                    withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, b.baseAddress, b.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
                }
                sent += 1
            }
            usleep(500)
        }
        close(fd)
        print("sent \(sent) datagrams in \(seconds) s")
    }
}
