#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Foundation
import LockstepCore
import LockstepPeerWire
import LockstepPlayerProtocol

/// `lockstep-bench amplify`: a group member that tries to use an agent as an amplifier (review
/// finding M3), for the faults benchmark (run inside a lab host). It holds the key and sends the
/// requests that draw the largest answers (a hello, an empty digest and participant digest
/// asking for replies, a clock request), each time under a fresh sender id, from an address no
/// discovery vouches for and that never answers a challenge: the stand-in for a spoofed victim.
/// It counts the bytes that come back to that address.
struct AmplifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "amplify", abstract: "Ask an agent for large answers from an unvalidated address and count the bytes (a fault-injection helper).")

    @Option(help: "Target IPv4 address.") var host: String
    @Option(help: "Target UDP port.") var port: UInt16
    @Option(help: "Trigger rounds per second (4 datagrams each).") var rate = 20
    @Option(help: "Seconds.") var seconds = 5.0

    func run() throws {
        guard let code = ProcessInfo.processInfo.environment["LOCKSTEP_JOIN_CODE"], let group = try? JoinCode.parse(code, name: "amplify") else {
            throw ValidationError("LOCKSTEP_JOIN_CODE must hold the group's join code")
        }
        let sender = try UDPSender()
        let target = try UDPSender.address(host, port)
        let triggers: [PeerMessage] = [
            .hello(name: "x", wantsReply: true),
            .digest(GroupDigest(entries: [], fingerprint: 0), wantsReply: true),
            .participantDigest([], wantsReply: true),
            .clockRequest(exchange: 1, t1: PeerTime(ns: 1)),
        ]
        var sentBytes = 0
        var received = 0
        _ = UDPSender.paced(rate: rate, seconds: seconds, napMicros: 2_000) { _ in
            let sealer = EnvelopeSealer(sender: PeerID.random(), incarnation: UInt64(Date().timeIntervalSince1970 * 1e6), key: group.currentKey)
            for m in triggers {
                let datagram = sealer.seal(m.encoded())
                sentBytes += datagram.count
                sender.send(datagram, to: target)
            }
            received += sender.drain()
        }
        // Answers still on their way (retransmissions, clock bursts, hellos retried).
        let tail = MonotonicClock.read() + 3_000_000_000
        while MonotonicClock.read() < tail {
            received += sender.drain()
            usleep(10_000)
        }
        print("sent \(sentBytes) bytes received \(received) bytes")
    }
}
