/// One life of one peer: the peer's id and the incarnation it runs under. The operations of a
/// replica are numbered 1, 2, 3, … (``OperationID/seq``), so a version vector entry per replica
/// says exactly which of its operations a holder has. A restarted agent is a new replica: it
/// does not need to remember its last number.
public struct ReplicaID: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    public var peer: PeerID
    public var incarnation: UInt64

    public init(peer: PeerID, incarnation: UInt64) {
        self.peer = peer
        self.incarnation = incarnation
    }

    public static func < (a: ReplicaID, b: ReplicaID) -> Bool {
        (a.peer, a.incarnation) < (b.peer, b.incarnation)
    }

    /// 64 bits naming the replica in digests and operation references on the wire (FNV-1a of
    /// the peer id's bytes and the incarnation, big-endian): 12 bytes per vector entry instead
    /// of 32, so a 64-member digest fits one datagram. A receiver resolves it against the
    /// replicas it knows; one it does not know yet is simply something it lacks.
    public var wireHash: UInt64 {
        var h = StableHasher()
        h.add(peer)
        h.add(incarnation)
        return h.value
    }

    public var description: String { "\(peer.short)/\(incarnation)" }
}
