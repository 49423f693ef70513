/// One entry of a participant digest: whose record, and which version of it.
public struct ParticipantDigest: Equatable, Hashable, Sendable, Codable {
    public var peer: PeerID
    public var incarnation: UInt64
    public var version: UInt64

    public init(peer: PeerID, incarnation: UInt64, version: UInt64) {
        self.peer = peer
        self.incarnation = incarnation
        self.version = version
    }
}
