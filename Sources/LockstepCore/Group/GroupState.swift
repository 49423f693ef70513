/// The group state: which item the group plays, and a timeline per item. It is the fold of the
/// group's operations in ``Stamp`` order (``apply(_:)``), on every replica the same.
///
/// At most ``maxItems`` item registers are kept: the ones changed most recently (by stamp).
/// ``merge(_:)`` is the other way in: a register from a peer's folded state (a device that
/// joins a group whose history was folded before it came, see ``OperationLog``), kept if its
/// stamp is larger.
public struct GroupState: Equatable, Hashable, Sendable {
    /// How many item timelines are kept (the most recent ones). Older items' timelines are forgotten.
    public static let maxItems = 16

    public private(set) var current: CurrentRecord?
    public private(set) var items: [ItemID: ItemRecord]

    public init() {
        current = nil
        items = [:]
    }

    // MARK: - The fold

    /// Applies one operation (see ``OperationCommand`` for what each does). Returns whether the
    /// state changed: a command that changes nothing (a pause of a paused timeline, a start of
    /// one that is no longer waiting) leaves the registers, and who changed them, as they were.
    @discardableResult
    public mutating func apply(_ op: GroupOperation) -> Bool {
        let before = self
        switch op.command {
        case .join:
            return false
        case .load(let metadata):
            guard let item = op.item else { return false }
            current = CurrentRecord(item: item, metadata: metadata, by: op.by, stamp: op.stamp)
            if var r = items[item] {
                r.metadata = metadata
                put(r)
            } else {
                let t = Timeline(phase: .paused, anchorTime: op.at, position: .zero, rate: 1)
                put(record(for: op, item: item, metadata: metadata, timeline: t))
            }
        case .stop:
            current = CurrentRecord(item: nil, by: op.by, stamp: op.stamp)
            if let item = op.item, let r = items[item], r.timeline.phase != .stopped || r.timeline.position != .zero {
                let t = Timeline(phase: .stopped, anchorTime: op.at, position: .zero, rate: r.timeline.rate)
                put(record(for: op, item: item, metadata: r.metadata, timeline: t))
            }
        case .play, .pause, .seek, .rate, .hold, .start:
            guard let item = op.item else { return false }
            guard let r = items[item] else {
                // Its load was forgotten (more than maxItems items since): the origin's view stands.
                if let result = op.result { put(record(for: op, item: item, metadata: ItemMetadata(), timeline: result)) }
                return self != before
            }
            // Arithmetic on one clock only: a timeline on another basis takes the origin's result.
            let next = r.clock == op.basis ? Self.recompute(op.command, on: r.timeline, at: op.at) : (op.result ?? r.timeline)
            if next != r.timeline { put(record(for: op, item: item, metadata: r.metadata, timeline: next)) }
        }
        return self != before
    }

    /// What `command` at `at` makes of `t` (both on one clock).
    ///
    /// A playing timeline whose anchor is still ahead of `at` (a command ordered after a seek
    /// whose lead was longer than its own) has not begun: it is at its starting position, not
    /// extrapolated backwards.
    static func recompute(_ command: OperationCommand, on t: Timeline<PeerTime>, at: PeerTime) -> Timeline<PeerTime> {
        let here = t.position(at: max(at, t.anchorTime))
        switch command {
        case .play(let rate, let waits):
            let r = rate ?? t.rate
            if t.phase == .playing { return r == t.rate ? t : Timeline(phase: .playing, anchorTime: at, position: here, rate: r) }
            return Timeline(phase: waits ? .waiting : .playing, anchorTime: at, position: t.position, rate: r)
        case .pause:
            switch t.phase {
            case .playing: return Timeline(phase: .paused, anchorTime: at, position: here, rate: t.rate)
            case .paused: return t
            case .waiting, .stopped: return Timeline(phase: .paused, anchorTime: at, position: t.position, rate: t.rate)
            }
        case .seek(let position):
            return Timeline(phase: t.phase == .stopped ? .paused : t.phase, anchorTime: at, position: position, rate: t.rate)
        case .rate(let r):
            if t.phase == .playing { return Timeline(phase: .playing, anchorTime: at, position: here, rate: r) }
            return r == t.rate ? t : Timeline(phase: t.phase, anchorTime: at, position: t.position, rate: r)
        case .hold:
            return t.phase == .playing ? Timeline(phase: .waiting, anchorTime: at, position: here, rate: t.rate) : t
        case .start:
            return t.phase == .waiting ? Timeline(phase: .playing, anchorTime: at, position: t.position, rate: t.rate) : t
        case .load, .stop, .join:
            return t
        }
    }

    private func record(for op: GroupOperation, item: ItemID, metadata: ItemMetadata, timeline: Timeline<PeerTime>) -> ItemRecord {
        let alternate = op.stamp.origin == op.basis ? nil : RelayedAnchor(via: op.stamp.origin, anchorTime: op.originAt, bound: op.basisBound)
        // The origin's result may be anchored elsewhere than `at`; its alternate anchor is for `at`.
        let fits = timeline.anchorTime == op.at
        return ItemRecord(
            item: item, metadata: metadata, timeline: timeline, clock: op.basis, alternate: fits ? alternate : nil,
            action: op.command.action ?? .load, reason: op.reason, by: op.by, stamp: op.stamp)
    }

    private mutating func put(_ r: ItemRecord) {
        items[r.item] = r
        if items.count > GroupState.maxItems, let oldest = items.values.min(by: { $0.stamp < $1.stamp }) {
            items[oldest.item] = nil
        }
    }

    // MARK: - Registers from a peer's folded state

    /// Merges one item register: kept if its stamp is larger than this state's for the item.
    @discardableResult
    public mutating func merge(_ record: ItemRecord) -> Bool {
        // Equal stamps with different contents (replicas that folded differently, past the
        // log's bounds) resolve by content, the same way everywhere.
        if let existing = items[record.item], (existing.stamp, existing.contentHash) >= (record.stamp, record.contentHash) { return false }
        if items[record.item] == nil, items.count >= GroupState.maxItems,
            let oldest = items.values.min(by: { $0.stamp < $1.stamp }), oldest.stamp > record.stamp
        {
            return false
        }
        put(record)
        return true
    }

    /// Merges the current-item register: kept if its stamp is larger.
    @discardableResult
    public mutating func merge(_ record: CurrentRecord) -> Bool {
        if let existing = current, (existing.stamp, existing.contentHash) >= (record.stamp, record.contentHash) { return false }
        current = record
        return true
    }

    /// Merges every register of `other` (a commutative, associative, idempotent merge).
    public mutating func merge(_ other: GroupState) {
        if let c = other.current { merge(c) }
        for r in other.records { merge(r) }
    }

    /// The item registers, oldest first.
    public var records: [ItemRecord] { items.values.sorted { $0.stamp < $1.stamp } }

    /// 64 bits that differ, almost surely, when two states' registers differ. Digests carry it,
    /// so that replicas whose folded states differ (a device that joined after history was
    /// folded) exchange their registers.
    public var fingerprint: UInt64 {
        var hasher = StableHasher()
        hasher.add(current?.contentHash ?? 0)
        for r in items.values.sorted(by: { $0.item < $1.item }) { hasher.add(r.contentHash) }
        return hasher.value
    }
}
