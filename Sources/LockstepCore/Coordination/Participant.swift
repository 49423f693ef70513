/// What one player on a peer is doing, as the other peers see it.
///
/// Items are named by ``ItemID/stableHash`` here, not by their full identifier: it is enough to
/// tell whether two players are on the same item, and keeps a peer's record within one datagram.
public struct PlayerStatus: Equatable, Hashable, Sendable, Codable {
    public static let maxNameBytes = 32
    public static let maxSuspensions = 3
    public static let maxReasonBytes = 32

    public enum Readiness: UInt8, Sendable, Codable, CaseIterable, CustomStringConvertible {
        /// Loading the item; not able to play yet.
        case loading = 0
        /// Able to play at once.
        case ready = 1
        /// Was playing or ready, and is refilling its buffer.
        case buffering = 2

        public var description: String {
            switch self {
            case .loading: "loading"
            case .ready: "ready"
            case .buffering: "buffering"
            }
        }
    }

    /// The player's id on its agent.
    public var playerID: UInt32
    public var name: String
    /// ``ItemID/stableHash`` of the player's current item; nil when it has none.
    public var itemHash: UInt64?
    /// Playing for its own user alone (not coordinated).
    public var solo: Bool
    public var readiness: Readiness
    /// Active suspension reasons; empty when the player follows the group.
    public var suspensions: [String]
    public var outputLatencyNs: Int64
    public var startLatencyNs: Int64

    public init(playerID: UInt32, name: String, itemHash: UInt64?, solo: Bool = false, readiness: Readiness, suspensions: [String] = [], outputLatencyNs: Int64 = 0, startLatencyNs: Int64 = 0) {
        self.playerID = playerID
        self.name = name.truncated(toUTF8: PlayerStatus.maxNameBytes)
        self.itemHash = itemHash
        self.solo = solo
        self.readiness = readiness
        self.suspensions = Array(suspensions.prefix(PlayerStatus.maxSuspensions).map { $0.truncated(toUTF8: PlayerStatus.maxReasonBytes) })
        self.outputLatencyNs = max(0, outputLatencyNs)
        self.startLatencyNs = max(0, startLatencyNs)
    }

    /// Takes part in group playback of `item` (on it, not alone, not suspended).
    public func isParticipating(in item: UInt64) -> Bool {
        itemHash == item && !solo && suspensions.isEmpty
    }
}

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
