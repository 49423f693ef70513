#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CLockstepPosix
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LockstepCore
import Synchronization
import LockstepPlayerProtocol

/// The UDP socket to peers, with kernel receive timestamps.
///
/// SwiftNIO's datagram channels do not surface `SO_TIMESTAMPNS`, and the clock exchange's
/// accuracy depends on when a datagram reached this host, not when a user-space loop got to
/// it. So this socket is read with `recvmsg` by whoever polls its ``descriptor`` (the agent's own
/// thread, ``AgentLoop``): ``drain(onDatagram:onTransmitted:onKernelDrops:)`` hands each datagram
/// with its kernel receive time (converted to `CLOCK_MONOTONIC`) to a callback. Sending is a plain
/// `sendto` from any thread. One dual-stack IPv6 socket serves IPv4 and IPv6 peers.
public final class PeerSocket: Sendable {
    /// A datagram as it arrived.
    public struct Datagram: Sendable {
        public var bytes: [UInt8]
        public var source: Endpoint
        /// When the kernel received it, on `CLOCK_MONOTONIC` (ns); the read time if the kernel gave none.
        public var receivedAt: Int64
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public let port: UInt16
    private let fd: Int32
    private let dualStack: Bool
    private let txTimestamps: Atomic<Bool>
    /// The receive buffer (the largest datagram) and the kernel's drop count last seen.
    private let receiveBuffer = Mutex<(buffer: [UInt8], kernelDrops: UInt32)>(([UInt8](repeating: 0, count: 65536), 0))

    /// Binds `[::]:port` (IPv4 too), or `0.0.0.0:port` where IPv6 is unavailable. Port 0 picks one.
    public init(port: UInt16, receiveBufferBytes: Int32 = 4 << 20) throws {
        var fd = socket(AF_INET6, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var dual = true
        if fd < 0 {
            fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            dual = false
        }
        guard fd >= 0 else { throw Failure(description: "cannot create a UDP socket: \(String(cString: strerror(errno)))") }
        var off: Int32 = 0, on: Int32 = 1, rcvbuf = receiveBufferBytes
        if dual { setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &off, socklen_t(MemoryLayout<Int32>.size)) }
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        // A bounded kernel buffer: under a flood the kernel drops, the agent does not grow.
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, socklen_t(MemoryLayout<Int32>.size))
        _ = lockstep_enable_rx_timestamps(fd)
        _ = lockstep_enable_rx_drop_count(fd)
        let tx = lockstep_enable_tx_timestamps(fd) == 0

        var bound: Int32
        if dual {
            var a = sockaddr_in6()
            a.sin6_family = sa_family_t(AF_INET6)
            a.sin6_port = port.bigEndian
            a.sin6_addr = in6addr_any
            bound = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) } }
        } else {
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            a.sin_port = port.bigEndian
            bound = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        }
        guard bound == 0 else {
            let e = errno
            close(fd)
            throw Failure(description: "cannot bind UDP port \(port): \(String(cString: strerror(e)))")
        }
        var storage = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        self.port = Self.endpoint(from: storage)?.port ?? port
        self.fd = fd
        self.dualStack = dual
        self.txTimestamps = Atomic(tx)
    }

    deinit {
        close(fd)
    }

    /// True while sends can ask for kernel transmit timestamps (Linux 6.13 or later: software
    /// timestamps with a per-send key). Turned off for good if the kernel refuses a request.
    public var transmitTimestamps: Bool { txTimestamps.load(ordering: .relaxed) }

    /// Sends one datagram. Returns false (and does not throw) when the kernel refuses it:
    /// a peer that went away must not take the agent with it. With `timestampKey`, the kernel's
    /// transmit time of this datagram is reported under that key (see ``drain(onDatagram:onTransmitted:onKernelDrops:)``)
    /// while ``transmitTimestamps`` is true.
    @discardableResult
    public func send(_ bytes: [UInt8], to endpoint: Endpoint, timestampKey: UInt32? = nil) -> Bool {
        bytes.withUnsafeBytes { buffer in
            withSockaddr(endpoint) { address, length in
                if let key = timestampKey, txTimestamps.load(ordering: .relaxed) {
                    if lockstep_send_timestamped(fd, buffer.baseAddress, buffer.count, address, length, key) >= 0 { return true }
                    guard errno == EINVAL else { return false }
                    // A kernel without per-send timestamp keys: plain sends from now on.
                    txTimestamps.store(false, ordering: .relaxed)
                }
                return sendto(fd, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT), address, length) >= 0
            } ?? false
        }
    }

    /// Sends every datagram of `batch`, in order, in one system call where the kernel allows
    /// (`sendmmsg(2)`): an agent telling the whole group enters the kernel once, not once a peer
    /// (the kernel may still let a peer it woke run in between). Returns, for each datagram, whether
    /// the kernel took it (one it refused, or an address of no family this socket has, is skipped).
    public func send(_ batch: [(bytes: [UInt8], to: Endpoint)]) -> [Bool] {
        guard !batch.isEmpty else { return [] }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(batch.reduce(0) { $0 + $1.bytes.count })
        var lengths: [Int] = []
        var addresses: [sockaddr_storage] = []
        var addressLengths: [socklen_t] = []
        var sendable: [Int] = []
        for (i, datagram) in batch.enumerated() {
            guard let address = withSockaddr(datagram.to, { address, length -> (sockaddr_storage, socklen_t) in
                var storage = sockaddr_storage()
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: address, count: Int(length))) }
                return (storage, length)
            }) else { continue }
            bytes.append(contentsOf: datagram.bytes)
            lengths.append(datagram.bytes.count)
            addresses.append(address.0)
            addressLengths.append(address.1)
            sendable.append(i)
        }
        var failed = [UInt8](repeating: 1, count: sendable.count)
        if !sendable.isEmpty {
            _ = lockstep_send_many(fd, bytes, lengths, addresses, addressLengths, UInt32(sendable.count), &failed)
        }
        var taken = [Bool](repeating: false, count: batch.count)
        for (k, i) in sendable.enumerated() { taken[i] = failed[k] == 0 }
        return taken
    }

    /// Calls `body` with `endpoint` as a socket address of this socket's family; nil if it has none.
    private func withSockaddr<R>(_ endpoint: Endpoint, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R? {
        switch endpoint {
        case .v4(let a, let b, let c, let d, let port) where !dualStack:
            var s = sockaddr_in()
            s.sin_family = sa_family_t(AF_INET)
            s.sin_port = port.bigEndian
            s.sin_addr.s_addr = (UInt32(a) << 24 | UInt32(b) << 16 | UInt32(c) << 8 | UInt32(d)).bigEndian
            return withUnsafePointer(to: &s) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        case .v6 where !dualStack:
            return nil
        default:
            var s = Self.sockaddr6(endpoint)
            return withUnsafePointer(to: &s) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) } }
        }
    }

    /// The socket's descriptor, for the loop that polls it: when it is readable or has an error
    /// queued, call ``drain(onDatagram:onTransmitted:onKernelDrops:)``.
    var descriptor: Int32 { fd }

    /// Reads everything waiting, without blocking. `onTransmitted` hears each transmit timestamp
    /// (the key given to ``send(_:to:timestampKey:)`` and when the datagram left, on
    /// `CLOCK_MONOTONIC`), first: they were queued before any reply to those datagrams. Then
    /// `onDatagram` hears every datagram, in arrival order, and `onKernelDrops` how many more the
    /// kernel dropped on this socket (its receive buffer was full: it was not read in time), as
    /// the next datagram read tells (Linux only). Call from one thread at a time, and not from the
    /// callbacks (they run while the receive buffer is held).
    func drain(onDatagram: (Datagram) -> Void, onTransmitted: (UInt32, Int64) -> Void, onKernelDrops: (UInt64) -> Void) {
        var key: UInt32 = 0
        var txReal: Int64 = 0
        while true {
            let got = lockstep_recv_tx_timestamp(fd, &key, &txReal)
            if got < 0 { break }
            if got == 1, let sent = Self.monotonic(fromKernelRealtime: txReal) { onTransmitted(key, sent) }
        }
        receiveBuffer.withLock { state in
            while true {
                var from = sockaddr_storage()
                var fromLen = socklen_t(MemoryLayout<sockaddr_storage>.size)
                var rxReal: Int64 = 0
                var truncated: Int32 = 0
                var drops: UInt32 = 0
                let n = state.buffer.withUnsafeMutableBytes { raw in
                    lockstep_recv_timestamped(fd, raw.baseAddress, raw.count, &from, &fromLen, &rxReal, &drops, &truncated)
                }
                if n < 0 { break }
                // The kernel's count only grows (wrapping at 2^32); none is attached before the first drop.
                if drops != 0 && drops != state.kernelDrops {
                    onKernelDrops(UInt64(drops &- state.kernelDrops))
                    state.kernelDrops = drops
                }
                let received = Self.monotonic(fromKernelRealtime: rxReal) ?? MonotonicClock.read()
                guard truncated == 0, let source = Self.endpoint(from: from) else { continue }
                onDatagram(Datagram(bytes: Array(state.buffer[0..<n]), source: source, receivedAt: received))
            }
        }
    }

    /// A kernel timestamp (on `CLOCK_REALTIME`) on `CLOCK_MONOTONIC`; nil for none (0) and for one
    /// from the future or older than a second, which is not believable (the wall clock stepped).
    static func monotonic(fromKernelRealtime stamp: Int64) -> Int64? {
        guard stamp > 0 else { return nil }
        let (realNow, monoMinusReal) = realtimeToMonotonic()
        let age = realNow - stamp
        guard age >= 0 && age < 1_000_000_000 else { return nil }
        return stamp + monoMinusReal
    }

    /// `CLOCK_MONOTONIC − CLOCK_REALTIME` now, and `CLOCK_REALTIME` now, for converting the
    /// kernel's (realtime) receive timestamps. Read as realtime, monotonic, realtime, keeping the
    /// tightest of a few tries: a thread preempted between two clock reads (common on a busy
    /// machine) would otherwise make a datagram look received earlier than it was, and the clock
    /// filter, which trusts the fastest-looking samples, would pick exactly those.
    static func realtimeToMonotonic() -> (realNow: Int64, monoMinusReal: Int64) {
        func real() -> Int64 {
            var t = timespec()
            clock_gettime(CLOCK_REALTIME, &t)
            return Int64(t.tv_sec) * 1_000_000_000 + Int64(t.tv_nsec)
        }
        var best: (gap: Int64, real: Int64, offset: Int64) = (.max, 0, 0)
        for _ in 0..<4 {
            let r1 = real(), m = MonotonicClock.read(), r2 = real()
            let gap = r2 - r1
            if gap >= 0 && gap < best.gap { best = (gap, r2, m - (r1 + gap / 2)) }
            if best.gap <= 1_000 { break }
        }
        return (best.real, best.offset)
    }

    static func sockaddr6(_ endpoint: Endpoint) -> sockaddr_in6 {
        var s = sockaddr_in6()
        s.sin6_family = sa_family_t(AF_INET6)
        s.sin6_port = endpoint.port.bigEndian
        var bytes = [UInt8](repeating: 0, count: 16)
        switch endpoint {
        case .v4(let a, let b, let c, let d, _):
            bytes[10] = 0xff
            bytes[11] = 0xff
            bytes[12] = a
            bytes[13] = b
            bytes[14] = c
            bytes[15] = d
        case .v6(let raw, _, let scope):
            bytes = raw
            s.sin6_scope_id = scope
        }
        withUnsafeMutableBytes(of: &s.sin6_addr) { dst in
            for i in 0..<16 { dst[i] = bytes[i] }
        }
        return s
    }

    static func endpoint(from storage: sockaddr_storage) -> Endpoint? {
        var storage = storage
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { p in
                    let a = UInt32(bigEndian: p.pointee.sin_addr.s_addr)
                    return Endpoint.v4(a: UInt8(a >> 24), b: UInt8(a >> 16 & 0xff), c: UInt8(a >> 8 & 0xff), d: UInt8(a & 0xff), port: UInt16(bigEndian: p.pointee.sin_port))
                }
            }
        case AF_INET6:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { p in
                    var bytes = [UInt8](repeating: 0, count: 16)
                    withUnsafeBytes(of: p.pointee.sin6_addr) { src in for i in 0..<16 { bytes[i] = src[i] } }
                    let port = UInt16(bigEndian: p.pointee.sin6_port)
                    // An IPv4 peer on the dual-stack socket arrives as ::ffff:a.b.c.d.
                    if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff {
                        return Endpoint.v4(a: bytes[12], b: bytes[13], c: bytes[14], d: bytes[15], port: port)
                    }
                    let linkLocal = bytes[0] == 0xfe && bytes[1] & 0xc0 == 0x80
                    return Endpoint.v6(bytes: bytes, port: port, scope: linkLocal ? p.pointee.sin6_scope_id : 0)
                }
            }
        default:
            return nil
        }
    }
}
