/// For a record relayed by a peer other than its origin: its anchor on the relay's clock, kept
/// so that a node with no estimate of the origin's clock can still place the timeline.
public struct RelayedAnchor: Sendable, Equatable {
    public var via: PeerID
    public var anchorTime: PeerTime
    public var bound: TimeSpan
}
