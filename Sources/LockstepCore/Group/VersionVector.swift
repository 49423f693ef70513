/// A version vector: for each replica, how many of its operations (numbered 1, 2, 3, …) the
/// holder has. Exact for any number of replicas: nothing is truncated.
///
/// It answers the two questions the merge needs: was operation `a` in the past of operation `b`
/// (then `b` is causally later), or neither way (concurrent); and has every member seen an
/// operation (then it is stable and can fold into the checkpoint).
public struct VersionVector: Equatable, Hashable, Sendable {
    public private(set) var counters: [ReplicaID: UInt64]

    public init(_ counters: [ReplicaID: UInt64] = [:]) {
        self.counters = counters.filter { $0.value > 0 }
    }

    /// One entry: a replica and how many of its operations.
    public struct Entry: Equatable, Hashable, Sendable, Codable {
        public var replica: ReplicaID
        public var counter: UInt64
        public init(replica: ReplicaID, counter: UInt64) {
            self.replica = replica
            self.counter = counter
        }
    }

    /// Entries sorted by replica (for the wire and for display).
    public var entries: [Entry] {
        counters.sorted { $0.key < $1.key }.map { Entry(replica: $0.key, counter: $0.value) }
    }

    public subscript(replica: ReplicaID) -> UInt64 {
        get { counters[replica] ?? 0 }
        set { counters[replica] = newValue == 0 ? nil : newValue }
    }

    /// True if the holder has operation `id`.
    public func contains(_ id: OperationID) -> Bool { self[id.replica] >= id.seq }

    /// True if every operation `other` has, this has too.
    public func covers(_ other: VersionVector) -> Bool {
        other.counters.allSatisfy { self[$0.key] >= $0.value }
    }

    /// The entry-wise maximum.
    public func merged(with other: VersionVector) -> VersionVector {
        var out = self
        out.merge(other)
        return out
    }

    public mutating func merge(_ other: VersionVector) {
        for (r, c) in other.counters where c > self[r] { counters[r] = c }
    }

    /// Drops a replica's entry (pruning, see ``OperationLog``).
    public mutating func remove(_ replica: ReplicaID) { counters[replica] = nil }

    public enum Order: Equatable, Sendable { case before, after, equal, concurrent }

    /// How `self` relates to `other`.
    public func compare(_ other: VersionVector) -> Order {
        switch (other.covers(self), covers(other)) {
        case (true, true): .equal
        case (true, false): .before
        case (false, true): .after
        case (false, false): .concurrent
        }
    }
}
