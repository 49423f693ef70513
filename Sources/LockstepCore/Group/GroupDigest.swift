/// What a replica has, for anti-entropy: per replica, how many of its operations (a version
/// vector, each replica named by its 64-bit ``ReplicaID/wireHash``), and a fingerprint of its
/// state. 16 bytes per entry: 80 entries (a 64-member group and then some) fit one datagram.
public struct GroupDigest: Equatable, Hashable, Sendable, Codable {
    public static let maxEntries = 80

    public struct Entry: Equatable, Hashable, Sendable, Codable {
        public var replicaHash: UInt64
        public var counter: UInt64
        public init(replicaHash: UInt64, counter: UInt64) {
            self.replicaHash = replicaHash
            self.counter = counter
        }
    }

    /// Sorted by hash, unique, non-zero counters.
    public var entries: [Entry]
    public var fingerprint: UInt64

    public init(entries: [Entry], fingerprint: UInt64) {
        self.entries = entries
        self.fingerprint = fingerprint
    }

    /// The entries as a version vector over the replicas `known` names (an entry naming none of
    /// them is something the receiver lacks), and whether any entry was unknown.
    public func vector(known: [UInt64: ReplicaID]) -> (vector: VersionVector, unknown: Bool) {
        var v = VersionVector()
        var unknown = false
        for e in entries {
            if let r = known[e.replicaHash] { v[r] = max(v[r], e.counter) } else { unknown = true }
        }
        return (v, unknown)
    }
}
