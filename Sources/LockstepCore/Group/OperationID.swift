/// An operation's identity: its replica and its number there (1, 2, 3, … without gaps).
public struct OperationID: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    public var replica: ReplicaID
    public var seq: UInt64

    public init(replica: ReplicaID, seq: UInt64) {
        self.replica = replica
        self.seq = seq
    }

    public static func < (a: OperationID, b: OperationID) -> Bool {
        (a.replica, a.seq) < (b.replica, b.seq)
    }

    public var description: String { "\(replica)#\(seq)" }
}
