/// The register naming the item the group plays (SharePlay's current activity), set by the
/// latest `load` or `stop`. `item == nil` means the group was stopped.
public struct CurrentRecord: Equatable, Hashable, Sendable, Codable {
    public var item: ItemID?
    public var metadata: ItemMetadata
    /// The player whose user loaded or stopped it, when a player did.
    public var by: String?
    public var stamp: Stamp

    public init(item: ItemID?, metadata: ItemMetadata = .init(), by: String? = nil, stamp: Stamp) {
        self.item = item
        self.metadata = metadata
        self.by = by
        self.stamp = stamp
    }
}

extension CurrentRecord {
    /// A stable hash of what the register holds (see ``GroupState/fingerprint``).
    public var contentHash: UInt64 {
        var h = StableHasher()
        h.add(item?.stableHash ?? 0)
        h.add(stamp)
        return h.value
    }
}
