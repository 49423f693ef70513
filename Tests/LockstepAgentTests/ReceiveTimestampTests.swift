#if canImport(Glibc)
import Glibc
#endif
import LockstepCore
import Synchronization
import Testing

@testable import LockstepAgent
import LockstepPlayerProtocol

/// The conversion of the kernel's realtime receive timestamps onto CLOCK_MONOTONIC.
@Suite("Receive timestamps")
struct ReceiveTimestampTests {
    @Test("a realtime instant read now converts to a monotonic time between monotonic reads taken around it")
    func conversionLandsBetweenReads() {
        for _ in 0..<1000 {
            let before = MonotonicClock.read()
            let (realNow, offset) = PeerSocket.realtimeToMonotonic()
            let after = MonotonicClock.read()
            let converted = realNow + offset
            #expect(converted >= before - 20_000 && converted <= after + 20_000, "\(converted - before) ns after the first read, \(after - converted) ns before the second")
        }
    }
}

/// Kernel transmit timestamps on a real socket (loopback).
@Suite("Transmit timestamps")
struct TransmitTimestampTests {
    @Test("a keyed send reports its kernel transmit time under its key: after the agent's stamp, before the receiver's kernel receive time")
    func keyedSendIsTimestamped() throws {
        let sender = try PeerSocket(port: 0)
        let receiver = try PeerSocket(port: 0)
        let sent = Mutex<[UInt32: Int64]>([:])
        let received = Mutex<[Int64]>([])
        let senderReader = SocketReader(sender, onTransmitted: { key, at in sent.withLock { $0[key] = at } })
        let receiverReader = SocketReader(receiver, onDatagram: { d in received.withLock { $0.append(d.receivedAt) } })
        defer { _ = (senderReader, receiverReader) }
        let destination = Endpoint.v4(a: 127, b: 0, c: 0, d: 1, port: receiver.port)
        var stamps: [(key: UInt32, before: Int64)] = []
        for key in UInt32(40)..<UInt32(45) {
            let before = MonotonicClock.read()
            #expect(sender.send([1, 2, 3], to: destination, timestampKey: key))
            stamps.append((key, before))
            #expect(sender.send([4], to: destination))  // not keyed: no timestamp
            usleep(2_000)
        }
        let deadline = MonotonicClock.read() + Nanos.second
        while MonotonicClock.read() < deadline, sent.withLock({ $0.count }) < 5 || received.withLock({ $0.count }) < 10 { usleep(1_000) }
        let times = sent.withLock { $0 }
        let arrivals = received.withLock { $0 }
        #expect(arrivals.count == 10)
        guard sender.transmitTimestamps else {
            // A kernel before 6.13 cannot key a send's timestamp: the socket falls back to plain
            // sends (the agent's own stamps), and every datagram still goes out.
            #expect(times.isEmpty)
            return
        }
        #expect(Set(times.keys) == Set(stamps.map(\.key)))
        for (i, s) in stamps.enumerated() {
            let at = try #require(times[s.key])
            #expect(at >= s.before, "key \(s.key): transmit time after the stamp before sending")
            #expect(at <= arrivals[2 * i], "key \(s.key): transmit time before the receiver's kernel receive time")
        }
    }
}

#if os(Linux)
/// What the kernel drops before the agent reads it is counted, not silently lost (Linux's
/// `SO_RXQ_OVFL`; other systems have no such count).
@Suite("Kernel receive drops")
struct KernelDropTests {
    @Test("datagrams the kernel drops on a full receive buffer are reported: read plus dropped equals sent")
    func overflowIsCounted() throws {
        // The smallest buffer the kernel allows (it doubles the request and has a floor), filled
        // before anything reads it.
        let receiver = try PeerSocket(port: 0, receiveBufferBytes: 1)
        let sender = try PeerSocket(port: 0)
        let destination = Endpoint.v4(a: 127, b: 0, c: 0, d: 1, port: receiver.port)
        let total = 2_000
        for i in 0..<total { #expect(sender.send([UInt8](repeating: UInt8(i & 0xff), count: 200), to: destination)) }
        let read = Mutex(0), dropped = Mutex<UInt64>(0), markersRead = Mutex(0)
        let reader = SocketReader(
            receiver,
            onDatagram: { d in read.withLock { $0 += 1 }; if d.bytes.count == 1 { markersRead.withLock { $0 += 1 } } },
            onKernelDrops: { more in dropped.withLock { $0 += more } })
        defer { _ = reader }
        // The kernel reports drops with the next datagram it queues: small markers go after the
        // burst until one is read (one sent while the buffer is still full is dropped too).
        var sent = total
        let deadline = MonotonicClock.read() + 2 * Nanos.second
        while MonotonicClock.read() < deadline, markersRead.withLock({ $0 }) == 0 {
            #expect(sender.send([0xEE], to: destination))
            sent += 1
            usleep(10_000)
        }
        while MonotonicClock.read() < deadline, read.withLock({ $0 }) + Int(dropped.withLock({ $0 })) < sent { usleep(1_000) }
        let (r, d) = (read.withLock { $0 }, dropped.withLock { $0 })
        #expect(d > 0, "a buffer this small overflows")
        #expect(r + Int(d) == sent, "read \(r), dropped \(d), sent \(sent)")
    }
}
#endif

/// Reads a socket as the agent does: an ``AgentLoop`` polls it and drains it into the callbacks,
/// until the reader is released.
final class SocketReader: Sendable {
    let loop = AgentLoop(name: "test-reader")

    init(
        _ socket: PeerSocket, onDatagram: @escaping @Sendable (PeerSocket.Datagram) -> Void = { _ in },
        onTransmitted: @escaping @Sendable (UInt32, Int64) -> Void = { _, _ in }, onKernelDrops: @escaping @Sendable (UInt64) -> Void = { _ in }
    ) {
        loop.execute { [loop] in
            loop.watch(socket.descriptor) {
                socket.drain(onDatagram: onDatagram, onTransmitted: onTransmitted, onKernelDrops: onKernelDrops)
            }
        }
    }
}
