/// FNV-1a over values written big-endian: the same on every platform and run (Swift's `Hasher`
/// is seeded per process), for fingerprints that replicas compare.
public struct StableHasher: Sendable {
    var bytes: [UInt8] = []

    public init() {}

    public mutating func add(_ v: UInt64) {
        for s in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: v >> UInt64(s))) }
    }

    public mutating func add(_ v: Int64) { add(UInt64(bitPattern: v)) }
    public mutating func add(_ v: Double) { add(v.bitPattern) }
    public mutating func add(_ peer: PeerID) { bytes += peer.bytes }

    public mutating func add(_ s: Stamp) {
        add(s.time)
        add(s.origin)
        add(s.incarnation)
        add(s.seq)
    }

    public var value: UInt64 { FNV1a.hash(bytes) }
}
