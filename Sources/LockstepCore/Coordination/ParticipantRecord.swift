/// Everything a peer publishes about its players. Owned by that peer: a newer record (higher
/// incarnation, then higher version) replaces an older one, so every peer converges on the
/// owner's latest word.
public struct ParticipantRecord: Equatable, Hashable, Sendable, Codable {
    public static let maxPlayers = 4

    public var peer: PeerID
    public var incarnation: UInt64
    public var version: UInt64
    public var players: [PlayerStatus]

    public init(peer: PeerID, incarnation: UInt64, version: UInt64, players: [PlayerStatus]) {
        self.peer = peer
        self.incarnation = incarnation
        self.version = version
        self.players = Array(players.prefix(ParticipantRecord.maxPlayers))
    }

    /// True if `self` should replace `other` (same owner).
    public func supersedes(_ other: ParticipantRecord) -> Bool {
        (incarnation, version) > (other.incarnation, other.version)
    }
}
