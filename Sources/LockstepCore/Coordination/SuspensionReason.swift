/// Why a player stepped out of group playback for a while (SharePlay's suspension reasons), as it
/// travels in participant records (text, at most ``PlayerStatus/maxReasonBytes``).
public enum SuspensionReason: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The agent's own: a player that is not ready while the group plays steps out until it is.
    case stallRecovery
    /// Something else took the player's output (a call, an alarm).
    case interruption
    /// The user is scrubbing.
    case userChangingTime
    /// An advertisement or other interstitial is playing.
    case interstitial
    /// The player waits for its user (a login, a prompt).
    case userActionRequired
    /// Any other reason, the player's own text.
    case custom(String)

    public init(text: String) {
        switch text {
        case "stall-recovery": self = .stallRecovery
        case "interruption": self = .interruption
        case "user-changing-time": self = .userChangingTime
        case "interstitial": self = .interstitial
        case "user-action-required": self = .userActionRequired
        default: self = .custom(text.truncated(toUTF8: PlayerStatus.maxReasonBytes))
        }
    }

    /// The text on the wire and for players.
    public var text: String {
        switch self {
        case .stallRecovery: "stall-recovery"
        case .interruption: "interruption"
        case .userChangingTime: "user-changing-time"
        case .interstitial: "interstitial"
        case .userActionRequired: "user-action-required"
        case .custom(let text): text
        }
    }

    public var description: String { text }
}

extension SuspensionReason {
    public init(from decoder: any Decoder) throws {
        self.init(text: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(text)
    }
}
