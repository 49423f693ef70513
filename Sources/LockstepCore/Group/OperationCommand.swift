/// What an operation does to the group's timeline: an operation, not a state overwrite, so that
/// concurrent commands compose (`Protocol/peer-protocol.md` §5.2 gives the table).
///
/// Every command takes effect at its operation's instant `at`:
/// - `load` makes the item the group's item (its timeline starts paused at 0 if it has none);
/// - `play` starts from where the timeline is (or waits for the participants, when `waits`);
///   on a playing timeline it only changes the rate, if it names another;
/// - `pause` freezes the timeline where it is at `at`;
/// - `seek` moves the position and keeps playing or paused as it was;
/// - `rate` changes the speed keeping the position continuous;
/// - `hold` makes a playing timeline wait where it is (a participant suspended for a reason
///   that makes the group wait); `start` starts a waiting one (every participant ready, or
///   waited too long);
/// - `stop` stops the item and the group plays nothing;
/// - `join` does nothing: it only carries a wide causal frontier (see ``GroupOperation/maxInlineHeads``).
public enum OperationCommand: Hashable, Sendable, CustomStringConvertible {
    case load(ItemMetadata)
    case play(rate: Double?, waits: Bool)
    case pause
    case seek(MediaPosition)
    case rate(Double)
    case hold(SuspensionReason)
    case start
    case stop
    case join

    /// "Who changed what", as players and peers are told.
    public var action: Action? {
        switch self {
        case .load: .load
        case .play: .play
        case .pause, .hold: .pause
        case .seek: .seek
        case .rate: .setRate
        case .start: .start
        case .stop: .stop
        case .join: nil
        }
    }

    public var description: String {
        switch self {
        case .load: "load"
        case .play(let rate, let waits): "play" + (rate.map { " ×\($0)" } ?? "") + (waits ? " (waits)" : "")
        case .pause: "pause"
        case .seek(let p): "seek \(p)"
        case .rate(let r): "rate ×\(r)"
        case .hold(let r): "hold (\(r.text))"
        case .start: "start"
        case .stop: "stop"
        case .join: "join"
        }
    }
}

extension OperationCommand: Codable {
    enum CodingKeys: String, CodingKey { case kind, metadata, rate, waits, position, reason }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        switch try c.decode(String.self, forKey: .kind) {
        case "load": self = .load(try c.decode(ItemMetadata.self, forKey: .metadata))
        case "play": self = .play(rate: try c.decodeIfPresent(Double.self, forKey: .rate), waits: try c.decode(Bool.self, forKey: .waits))
        case "pause": self = .pause
        case "seek": self = .seek(try c.decode(MediaPosition.self, forKey: .position))
        case "rate": self = .rate(try c.decode(Double.self, forKey: .rate))
        case "hold": self = .hold(try c.decode(SuspensionReason.self, forKey: .reason))
        case "start": self = .start
        case "stop": self = .stop
        case "join": self = .join
        case let other: throw DecodingError.dataCorruptedError(forKey: .kind, in: c, debugDescription: "unknown command \(other)")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .load(let m):
            try c.encode("load", forKey: .kind)
            try c.encode(m, forKey: .metadata)
        case .play(let rate, let waits):
            try c.encode("play", forKey: .kind)
            try c.encodeIfPresent(rate, forKey: .rate)
            try c.encode(waits, forKey: .waits)
        case .pause: try c.encode("pause", forKey: .kind)
        case .seek(let p):
            try c.encode("seek", forKey: .kind)
            try c.encode(p, forKey: .position)
        case .rate(let r):
            try c.encode("rate", forKey: .kind)
            try c.encode(r, forKey: .rate)
        case .hold(let reason):
            try c.encode("hold", forKey: .kind)
            try c.encode(reason, forKey: .reason)
        case .start: try c.encode("start", forKey: .kind)
        case .stop: try c.encode("stop", forKey: .kind)
        case .join: try c.encode("join", forKey: .kind)
        }
    }
}
