/// Why a command was issued when no user issued it directly, as its record carries it (at most
/// ``ItemRecord/maxReasonBytes`` on the wire, as text: `ready`, `timeout`, `play-immediately`,
/// `suspension-ended`, `waiting: REASON`). Text from another implementation that names none of
/// these is kept as ``other(_:)``.
public enum CommandReason: Hashable, Sendable, Codable, CustomStringConvertible {
    /// Every participant became ready: the waiting group starts.
    case ready
    /// The group waited too long for a participant: it starts without it.
    case timeout
    /// A player asked to start without waiting (SharePlay's playImmediately).
    case playImmediately
    /// A player ended a suspension proposing a new time (e.g. the end of a scrub).
    case suspensionEnded
    /// A player is suspended for a reason that makes the group wait: the group holds.
    case waiting(SuspensionReason)
    /// Any other text.
    case other(String)

    public init(text: String) {
        switch text {
        case "ready": self = .ready
        case "timeout": self = .timeout
        case "play-immediately": self = .playImmediately
        case "suspension-ended": self = .suspensionEnded
        default:
            if text.hasPrefix("waiting: ") {
                self = .waiting(SuspensionReason(text: String(text.dropFirst("waiting: ".count))))
            } else {
                self = .other(text.truncated(toUTF8: ItemRecord.maxReasonBytes))
            }
        }
    }

    /// The text on the wire and for players.
    public var text: String {
        switch self {
        case .ready: "ready"
        case .timeout: "timeout"
        case .playImmediately: "play-immediately"
        case .suspensionEnded: "suspension-ended"
        case .waiting(let r): ("waiting: " + r.text).truncated(toUTF8: ItemRecord.maxReasonBytes)
        case .other(let text): text.truncated(toUTF8: ItemRecord.maxReasonBytes)
        }
    }

    public var description: String { text }

    public init(from decoder: any Decoder) throws {
        self.init(text: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(text)
    }
}
