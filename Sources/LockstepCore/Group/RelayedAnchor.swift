/// A timeline's anchor on another peer's clock than the one the timeline names: the origin's
/// own clock (carried by the operation), or the clock of a peer that relayed it. A node with no
/// estimate of the timeline's clock places the timeline through this one, adding `bound`.
public struct RelayedAnchor: Sendable, Equatable, Hashable, Codable {
    public var via: PeerID
    public var anchorTime: PeerTime
    public var bound: TimeSpan

    public init(via: PeerID, anchorTime: PeerTime, bound: TimeSpan) {
        self.via = via
        self.anchorTime = anchorTime
        self.bound = bound
    }
}
