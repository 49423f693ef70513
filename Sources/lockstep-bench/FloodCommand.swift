#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Foundation
import LockstepCore
import LockstepPlayerProtocol

/// `lockstep-bench flood`: a stranger on the LAN sending datagrams as fast as asked, for the
/// faults benchmark (run inside a lab host). Half look like Lockstep datagrams from random
/// senders with plausible incarnations (so the victim must derive a key and try to authenticate
/// them), half are random bytes.
struct FloodCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "flood", abstract: "Send junk datagrams to HOST:PORT at a given rate (a fault-injection helper).")

    @Option(help: "Target IPv4 address.") var host: String
    @Option(help: "Target UDP port.") var port: UInt16
    @Option(help: "Datagrams per second.") var rate = 50_000
    @Option(help: "Seconds.") var seconds = 10.0

    func run() throws {
        let sender = try UDPSender()
        let target = try UDPSender.address(host, port)
        var rng = SystemRandomNumberGenerator()
        var packets: [[UInt8]] = []
        for i in 0..<256 {
            var p = (0..<120).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if i % 2 == 0 {
                p[0] = 0x4C
                p[1] = 0x4B
                p[2] = 1
                p[3] = 1
                // A plausible incarnation (now, in µs, as agents use): junk that claims an
                // implausible one is refused before any crypto, so this is the costly kind.
                let incarnation = UInt64(Date().timeIntervalSince1970 * 1e6)
                for k in 0..<8 { p[20 + k] = UInt8(truncatingIfNeeded: incarnation >> (56 - 8 * k)) }
            }
            packets.append(p)
        }
        let sent = UDPSender.paced(rate: rate, seconds: seconds, napMicros: 500) { n in sender.send(packets[n & 255], to: target) }
        print("sent \(sent) datagrams in \(seconds) s")
    }
}
