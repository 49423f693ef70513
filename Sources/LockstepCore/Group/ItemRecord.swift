/// The replicated register for one item: its timeline and the command that set it.
///
/// Records merge by keeping the larger ``Stamp``; that is the whole merge rule.
public struct ItemRecord: Equatable, Hashable, Sendable, Codable {
    public static let maxReasonBytes = 64

    public var item: ItemID
    public var metadata: ItemMetadata
    /// The timeline; its anchor is on the clock of `stamp.origin`.
    public var timeline: Timeline<PeerTime>
    public var action: Action
    /// Why the origin issued it, when not a plain user command. Informational only.
    public var reason: CommandReason?
    public var stamp: Stamp
    /// What the origin had seen when it issued the command.
    public var version: VersionVector

    public init(item: ItemID, metadata: ItemMetadata = .init(), timeline: Timeline<PeerTime>, action: Action, reason: CommandReason? = nil, stamp: Stamp, version: VersionVector) {
        self.item = item
        self.metadata = metadata
        self.timeline = timeline
        self.action = action
        self.reason = reason
        self.stamp = stamp
        self.version = version
    }
}
