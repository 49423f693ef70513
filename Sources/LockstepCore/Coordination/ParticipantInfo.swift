/// A participant of group playback on an item, for the players' participant lists.
public struct ParticipantInfo: Sendable, Equatable, Hashable {
    public var peer: PeerID
    public var playerID: UInt32
    public var name: String
    public var readiness: PlayerStatus.Readiness
    public var suspensions: [SuspensionReason]
    public var local: Bool
}
