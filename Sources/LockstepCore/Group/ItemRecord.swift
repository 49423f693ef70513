/// One item's register in the folded group state: its timeline and the operation that last
/// changed it ("who changed what").
public struct ItemRecord: Equatable, Hashable, Sendable, Codable {
    public static let maxReasonBytes = 64

    public var item: ItemID
    public var metadata: ItemMetadata
    /// The timeline; its anchor is on the clock of `clock` (the basis of the operation that set it).
    public var timeline: Timeline<PeerTime>
    public var clock: PeerID
    /// The same anchor on the clock of the operation's origin (when it is not `clock`), for a
    /// replica with no estimate of `clock`.
    public var alternate: RelayedAnchor?
    public var action: Action
    /// Why the origin issued it, when not a plain user command. Informational only.
    public var reason: CommandReason?
    /// The player whose user caused it, when a player did.
    public var by: String?
    /// The operation that last changed this register (its origin caused the change).
    public var stamp: Stamp

    public init(
        item: ItemID, metadata: ItemMetadata = .init(), timeline: Timeline<PeerTime>, clock: PeerID, alternate: RelayedAnchor? = nil,
        action: Action, reason: CommandReason? = nil, by: String? = nil, stamp: Stamp
    ) {
        self.item = item
        self.metadata = metadata
        self.timeline = timeline
        self.clock = clock
        self.alternate = alternate
        self.action = action
        self.reason = reason
        self.by = by
        self.stamp = stamp
    }
}

extension ItemRecord {
    /// A stable hash of what the register holds (see ``GroupState/fingerprint``).
    public var contentHash: UInt64 {
        var h = StableHasher()
        h.add(item.stableHash)
        h.add(stamp)
        h.add(UInt64(timeline.phase.rawValue))
        h.add(timeline.anchorTime.ns)
        h.add(timeline.position.ns)
        h.add(timeline.rate)
        h.add(clock)
        return h.value
    }
}
