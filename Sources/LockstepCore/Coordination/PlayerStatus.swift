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
    public var suspensions: [SuspensionReason]
    /// Clamped to ``Limits/latencyNs``.
    public var outputLatency: TimeSpan
    /// Clamped to ``Limits/latencyNs``.
    public var startLatency: TimeSpan

    public init(playerID: UInt32, name: String, itemHash: UInt64?, solo: Bool = false, readiness: Readiness, suspensions: [SuspensionReason] = [], outputLatency: TimeSpan = .zero, startLatency: TimeSpan = .zero) {
        self.playerID = playerID
        self.name = name.truncated(toUTF8: PlayerStatus.maxNameBytes)
        self.itemHash = itemHash
        self.solo = solo
        self.readiness = readiness
        self.suspensions = Array(suspensions.prefix(PlayerStatus.maxSuspensions))
        self.outputLatency = outputLatency.clamped(to: Limits.latencyNs)
        self.startLatency = startLatency.clamped(to: Limits.latencyNs)
    }

    // JSON (test vectors, debugging) names nanosecond fields with their unit.
    enum CodingKeys: String, CodingKey {
        case playerID, name, itemHash, solo, readiness, suspensions
        case outputLatency = "outputLatencyNs"
        case startLatency = "startLatencyNs"
    }
}
