/// A version vector: for each origin, the largest Lamport counter of its commands that the
/// holder had seen. It tells whether two commands were causally ordered or concurrent, which the
/// order of ``Stamp``s alone cannot.
///
/// Vectors are derived from the records a replica keeps (at most a few dozen), so they stay
/// bounded however many peers come and go: an origin whose commands have all been superseded
/// drops out.
public struct VersionVector: Equatable, Hashable, Sendable, Codable {
    /// Sorted by peer id, no zero entries.
    public private(set) var entries: [Entry]

    public struct Entry: Equatable, Hashable, Sendable, Codable {
        public var peer: PeerID
        public var counter: UInt64
        public init(peer: PeerID, counter: UInt64) {
            self.peer = peer
            self.counter = counter
        }
    }

    /// At most this many entries are kept (largest counters first), so a vector always fits a datagram.
    public static let maxEntries = 8

    public init(_ entries: [Entry] = []) {
        var best: [PeerID: UInt64] = [:]
        for e in entries where e.counter > 0 { best[e.peer] = max(best[e.peer] ?? 0, e.counter) }
        var list = best.map { Entry(peer: $0.key, counter: $0.value) }
        if list.count > VersionVector.maxEntries {
            list.sort { ($0.counter, $0.peer) > ($1.counter, $1.peer) }
            list.removeLast(list.count - VersionVector.maxEntries)
        }
        self.entries = list.sorted { $0.peer < $1.peer }
    }

    public subscript(peer: PeerID) -> UInt64 {
        entries.first { $0.peer == peer }?.counter ?? 0
    }

    /// The entry-wise maximum.
    public func merged(with other: VersionVector) -> VersionVector {
        VersionVector(entries + other.entries)
    }

    public enum Order: Equatable, Sendable { case before, after, equal, concurrent }

    /// How `self` relates to `other`.
    public func compare(_ other: VersionVector) -> Order {
        var less = false, greater = false
        var i = 0, j = 0
        let a = entries, b = other.entries
        while i < a.count || j < b.count {
            if j >= b.count || (i < a.count && a[i].peer < b[j].peer) {
                greater = true; i += 1
            } else if i >= a.count || b[j].peer < a[i].peer {
                less = true; j += 1
            } else {
                if a[i].counter < b[j].counter { less = true }
                if a[i].counter > b[j].counter { greater = true }
                i += 1; j += 1
            }
        }
        switch (less, greater) {
        case (false, false): return .equal
        case (true, false): return .before
        case (false, true): return .after
        case (true, true): return .concurrent
        }
    }
}
