/// The replicated register naming the item the group plays (SharePlay's current activity).
/// `item == nil` means the group was stopped.
public struct CurrentRecord: Equatable, Hashable, Sendable, Codable {
    public var item: ItemID?
    public var metadata: ItemMetadata
    public var stamp: Stamp
    public var version: VersionVector

    public init(item: ItemID?, metadata: ItemMetadata = .init(), stamp: Stamp, version: VersionVector) {
        self.item = item
        self.metadata = metadata
        self.stamp = stamp
        self.version = version
    }
}
