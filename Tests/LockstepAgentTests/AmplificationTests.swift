#if canImport(Glibc)
import Glibc
#endif
import Foundation
import LockstepCore
import LockstepPeerWire
import LockstepTestKit
import Testing

@testable import LockstepAgent

/// Review finding M3: a member that puts someone else's address on its datagrams must not make
/// an agent a reflector or an amplifier. Here the "victim" address is a test socket that never
/// answers: it sends the agent a hello and a digest asking for replies (as a spoofing member
/// would, under a fresh sender id), and counts what comes back.
@Suite("Amplification")
struct AmplificationTests {
    @Test("an unvalidated address gets at most 3× the bytes it sent")
    func threeTimes() async throws {
        try await withTemporaryDirectory { dir in try await withRunningAgent(in: dir) { _, agent in
            let key = await agent.keys.group.currentKey
            let port = try #require(await agent.transport?.socket.port)
            let victim = try LoopbackUDP()
            let sealer = EnvelopeSealer(sender: PeerID.random(), incarnation: 7, key: key)
            let triggers: [PeerMessage] = [
                .hello(name: "x", wantsReply: true),
                .digest(GroupDigest(entries: [], fingerprint: 0), wantsReply: true),
                .participantDigest([], wantsReply: true),
                .clockRequest(exchange: 1, t1: PeerTime(ns: 5)),
            ]
            var sent = 0
            for message in triggers {
                let datagram = sealer.seal(message.encoded())
                sent += datagram.count
                victim.send(datagram, toPort: port)
            }
            let received = await victim.receiveBytes(for: 2.0)
            #expect(received > 0, "the agent answers within its budget")
            #expect(received <= 3 * sent, "\(received) bytes sent to an address that sent \(sent)")
            let counters = await agent.transport?.snapshot ?? [:]
            #expect((counters["dropped_unvalidated_amplification"] ?? 0) > 0)
        } }
    }
}

/// A UDP socket on 127.0.0.1 that sends and counts what it receives.
final class LoopbackUDP {
    let fd: Int32

    init() throws {
        fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let r = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard fd >= 0, r == 0 else { throw POSIXError(.EADDRNOTAVAIL) }
    }

    deinit { close(fd) }

    func send(_ datagram: [UInt8], toPort port: UInt16) {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = datagram.withUnsafeBytes { b in
            withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, b.baseAddress, b.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        }
    }

    /// Bytes received in the next `seconds` (polling, never blocking a thread).
    func receiveBytes(for seconds: Double) async -> Int {
        var total = 0
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while Date() < deadline {
            let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if n > 0 { total += n; continue }
            try? await Task.sleep(nanoseconds: 5_000_000)
        }
        return total
    }
}
