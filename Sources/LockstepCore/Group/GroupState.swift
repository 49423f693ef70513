/// The replicated group state: which item the group plays, and a timeline per item.
///
/// A state-based CRDT made of last-writer-wins registers ordered by ``Stamp``:
/// - one ``CurrentRecord`` (the group's item), merged by the larger stamp;
/// - one ``ItemRecord`` per item, merged per item by the larger stamp;
/// - at most ``maxItems`` item records: the ones with the largest stamps.
///
/// Each part is a maximum over a total order, and keeping the top `maxItems` by that order commutes
/// with taking the union, so the merge is commutative, associative and idempotent: replicas that
/// have seen the same records hold the same state whatever the order, duplicates or delays. The
/// state is the same on every replica; only how its anchors are converted to a local clock differs.
public struct GroupState: Equatable, Hashable, Sendable {
    /// How many item timelines are kept (the most recent ones). Older items' timelines are forgotten.
    public static let maxItems = 16

    public private(set) var current: CurrentRecord?
    public private(set) var items: [ItemID: ItemRecord]

    public init() {
        current = nil
        items = [:]
    }

    public enum MergeOutcome: Equatable, Sendable {
        /// The record is new and now part of the state.
        case applied
        /// The state already holds this exact record.
        case duplicate
        /// The state holds a later record for the same register (or the record is too old to keep).
        case superseded
    }

    /// Merges one item record.
    @discardableResult
    public mutating func merge(_ record: ItemRecord) -> MergeOutcome {
        if let existing = items[record.item] {
            if existing.stamp == record.stamp { return .duplicate }
            if existing.stamp > record.stamp { return .superseded }
        } else if items.count >= GroupState.maxItems, let oldest = items.values.min(by: { $0.stamp < $1.stamp }), oldest.stamp > record.stamp {
            return .superseded
        }
        items[record.item] = record
        if items.count > GroupState.maxItems, let oldest = items.values.min(by: { $0.stamp < $1.stamp }) {
            items[oldest.item] = nil
        }
        return .applied
    }

    /// Merges the current-item record.
    @discardableResult
    public mutating func merge(_ record: CurrentRecord) -> MergeOutcome {
        if let existing = current {
            if existing.stamp == record.stamp { return .duplicate }
            if existing.stamp > record.stamp { return .superseded }
        }
        current = record
        return .applied
    }

    /// Merges a whole state.
    public mutating func merge(_ other: GroupState) {
        if let c = other.current { merge(c) }
        for r in other.items.values.sorted(by: { $0.stamp < $1.stamp }) { merge(r) }
    }

    /// The records that would take this state's place, oldest first (for state transfer).
    public var records: [ItemRecord] { items.values.sorted { $0.stamp < $1.stamp } }

    /// The version vector of everything in the state: per origin, its largest counter here.
    public var version: VersionVector {
        var entries: [VersionVector.Entry] = []
        if let c = current {
            entries.append(.init(peer: c.stamp.origin, counter: c.stamp.lamport))
            entries += c.version.entries
        }
        for r in items.values {
            entries.append(.init(peer: r.stamp.origin, counter: r.stamp.lamport))
            entries += r.version.entries
        }
        return VersionVector(entries)
    }

    /// A compact summary for anti-entropy: each register's stamp.
    public var digest: GroupDigest {
        GroupDigest(current: current?.stamp, items: items.values.map { .init(itemHash: $0.item.stableHash, stamp: $0.stamp) }.sorted { $0.itemHash < $1.itemHash })
    }

    /// What this state holds that a replica with `digest` lacks (records newer than theirs or unknown to them).
    public func missing(from digest: GroupDigest) -> (current: CurrentRecord?, items: [ItemRecord]) {
        var theirs: [UInt64: Stamp] = [:]
        for e in digest.items { theirs[e.itemHash] = e.stamp }
        let c: CurrentRecord? = current.flatMap { mine in
            digest.current.map { mine.stamp > $0 } ?? true ? mine : nil
        }
        let newer = records.filter { r in theirs[r.item.stableHash].map { r.stamp > $0 } ?? true }
        return (c, newer)
    }

    /// True if a replica with `digest` holds something this state lacks.
    public func lacksSomething(of digest: GroupDigest) -> Bool {
        if let theirs = digest.current, current.map({ theirs > $0.stamp }) ?? true { return true }
        var mine: [UInt64: Stamp] = [:]
        for r in items.values { mine[r.item.stableHash] = r.stamp }
        let oldestKept = items.count >= GroupState.maxItems ? items.values.map(\.stamp).min() : nil
        for e in digest.items {
            if let m = mine[e.itemHash] {
                if e.stamp > m { return true }
            } else if oldestKept.map({ e.stamp > $0 }) ?? true {
                return true
            }
        }
        return false
    }
}
