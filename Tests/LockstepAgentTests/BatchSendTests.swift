#if canImport(Glibc)
import Glibc
#endif
import LockstepCore
import Synchronization
import Testing

@testable import LockstepAgent
import LockstepPlayerProtocol

/// Datagrams sent together (`sendmmsg`) on a real socket (loopback).
@Suite("Batch sends")
struct BatchSendTests {
    @Test("a batch reaches every destination in order; one the kernel refuses is skipped and reported, the rest still go")
    func refusedDatagramIsSkipped() throws {
        let sender = try PeerSocket(port: 0)
        let a = try PeerSocket(port: 0), b = try PeerSocket(port: 0)
        let atA = Mutex<[[UInt8]]>([]), atB = Mutex<[[UInt8]]>([])
        let readers = [SocketReader(a, onDatagram: { d in atA.withLock { $0.append(d.bytes) } }), SocketReader(b, onDatagram: { d in atB.withLock { $0.append(d.bytes) } })]
        defer { _ = readers }
        let toA = Endpoint.v4(a: 127, b: 0, c: 0, d: 1, port: a.port), toB = Endpoint.v4(a: 127, b: 0, c: 0, d: 1, port: b.port)
        // Larger than any UDP datagram: the kernel refuses it (EMSGSIZE).
        let tooLarge = [UInt8](repeating: 9, count: 70_000)
        let taken = sender.send([([1], toA), (tooLarge, toB), ([2, 2], toB), ([3, 3, 3], toA)])
        #expect(taken == [true, false, true, true])
        let deadline = MonotonicClock.read() + Nanos.second
        while MonotonicClock.read() < deadline, atA.withLock({ $0.count }) < 2 || atB.withLock({ $0.count }) < 1 { usleep(1_000) }
        #expect(atA.withLock { $0 } == [[1], [3, 3, 3]])
        #expect(atB.withLock { $0 } == [[2, 2]])
    }

    @Test("a batch longer than one system call's share arrives whole and in order")
    func longBatchArrivesInOrder() throws {
        let sender = try PeerSocket(port: 0)
        let receiver = try PeerSocket(port: 0)
        let got = Mutex<[[UInt8]]>([])
        let reader = SocketReader(receiver, onDatagram: { d in got.withLock { $0.append(d.bytes) } })
        defer { _ = reader }
        let to = Endpoint.v4(a: 127, b: 0, c: 0, d: 1, port: receiver.port)
        let batch = (0..<150).map { i in ([UInt8(i), UInt8(i / 7)], to) }
        #expect(sender.send(batch).allSatisfy { $0 })
        let deadline = MonotonicClock.read() + Nanos.second
        while MonotonicClock.read() < deadline, got.withLock({ $0.count }) < batch.count { usleep(1_000) }
        #expect(got.withLock { $0 } == batch.map(\.0))
    }
}
