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

    /// Two peers a member introduced to each other probe each other at once. The probe that
    /// arrives first ends the introduction's vouching for its sender's address (its peer is now
    /// heard), so the answers to it fall under the budget: the probe itself must be their credit.
    @Test("an introduced peer's probe earns the reply to it")
    func introducedProbeEarnsItsReply() async throws {
        try await withTemporaryDirectory { dir in try await withRunningAgent(in: dir) { _, agent in
            let key = await agent.keys.group.currentKey
            let port = try #require(await agent.transport?.socket.port)
            let introducer = try LoopbackUDP()
            let introduced = try LoopbackUDP()
            let introducerID = PeerID.random()
            let introducedID = PeerID.random()
            let fromIntroducer = EnvelopeSealer(sender: introducerID, incarnation: 7, key: key)
            let fromIntroduced = EnvelopeSealer(sender: introducedID, incarnation: 9, key: key)
            let opener = EnvelopeOpener(me: introducedID, keys: [key])
            func messages(_ datagrams: [[UInt8]]) -> [PeerMessage] {
                datagrams.compactMap { d in (try? opener.open(d)).flatMap { try? PeerMessage.decode($0.plaintext) } }
            }

            introducer.send(fromIntroducer.seal(PeerMessage.hello(name: "introducer", wantsReply: false).encoded()), toPort: port)
            let address = PeerAddress(peer: introducedID, endpoint: .v4(a: 127, b: 0, c: 0, d: 1, port: try introduced.port()))
            introducer.send(fromIntroducer.seal(PeerMessage.peerAddresses([address]).encoded()), toPort: port)
            let probes = messages(await introduced.receiveDatagrams(for: 1.0))
            #expect(probes.contains { if case .clockRequest(0, _) = $0 { true } else { false } }, "the agent probes the peer it was introduced to: \(probes)")

            let probe = fromIntroduced.seal(PeerMessage.clockRequest(exchange: 0, t1: PeerTime(ns: 42)).encoded())
            introduced.send(probe, toPort: port)
            let answers = messages(await introduced.receiveDatagrams(for: 1.5))
            #expect(answers.contains { if case .clockReply(0, 42, _, _) = $0 { true } else { false } }, "answers to the introduced peer's probe: \(answers)")
            #expect(answers.contains { if case .hello = $0 { true } else { false } }, "answers to the introduced peer's probe: \(answers)")
            // Less the agent's own probes, which go out only until the peer is heard (vouched).
            let bytes = answers.filter { if case .clockRequest(0, _) = $0 { false } else { true } }.map(Agent.sealedSize).reduce(0, +)
            #expect(bytes <= 3 * Agent.sealedSize(.clockRequest(exchange: 0, t1: PeerTime(ns: 42))), "still within the budget: \(bytes) bytes")
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

    /// The port the socket is bound to.
    func port() throws -> UInt16 {
        var addr = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let r = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        guard r == 0 else { throw POSIXError(.EBADF) }
        return UInt16(bigEndian: addr.sin_port)
    }

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
        await receiveDatagrams(for: seconds).map(\.count).reduce(0, +)
    }

    /// Datagrams received in the next `seconds` (polling, never blocking a thread).
    func receiveDatagrams(for seconds: Double) async -> [[UInt8]] {
        var datagrams: [[UInt8]] = []
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while Date() < deadline {
            let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if n > 0 { datagrams.append(Array(buffer[..<n])); continue }
            try? await Task.sleep(nanoseconds: 5_000_000)
        }
        return datagrams
    }
}
