/// A transport command, as a user (or a player's UI) gives it.
public enum GroupCommand: Sendable, Equatable {
    /// Make `item` the group's item; its timeline starts paused at 0 if it has none yet.
    case load(ItemID, ItemMetadata)
    /// Play (at `rate`, or the group's current rate).
    case play(rate: Double?)
    case pause
    /// Move to a media position, keeping playing or paused.
    case seek(position: MediaPosition)
    case setRate(Double)
    /// The group plays nothing.
    case stop

    public var action: Action {
        switch self {
        case .load: .load
        case .play: .play
        case .pause: .pause
        case .seek: .seek
        case .setRate: .setRate
        case .stop: .stop
        }
    }
}
