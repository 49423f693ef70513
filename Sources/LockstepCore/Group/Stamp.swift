/// An operation's place in the group's one order: a hybrid logical clock time, then the origin's
/// peer id, incarnation and operation number.
///
/// `time` is the most advanced device clock of the group as the origin read it when it issued
/// the operation (see ``GroupClock``), raised above every stamp the origin had seen. So:
/// - an operation issued after seeing another has a larger time: causally later wins;
/// - concurrent operations are ordered by when they were issued, to within the clocks' error;
/// - ties (same nanosecond) go to the larger peer id, then incarnation, then number.
/// Every replica orders the same stamps the same way, with no leader.
public struct Stamp: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// Nanoseconds on the group's time scale (hybrid logical clock).
    public var time: Int64
    public var origin: PeerID
    public var incarnation: UInt64
    /// The operation's number at its replica.
    public var seq: UInt64

    public init(time: Int64, origin: PeerID, incarnation: UInt64, seq: UInt64) {
        self.time = time
        self.origin = origin
        self.incarnation = incarnation
        self.seq = seq
    }

    public var replica: ReplicaID { ReplicaID(peer: origin, incarnation: incarnation) }
    public var id: OperationID { OperationID(replica: replica, seq: seq) }

    public static func < (a: Stamp, b: Stamp) -> Bool {
        (a.time, a.origin, a.incarnation, a.seq) < (b.time, b.origin, b.incarnation, b.seq)
    }

    public var description: String { "\(seq)@\(origin.short)" }
}
