/// How a request to the coordinator (a player's, or a command from the CLI) went: the reply the
/// shell gives before any event the request caused.
public enum RequestOutcome: Sendable, Equatable {
    /// Done; nothing more to say.
    case done
    /// The player's item: how the load went.
    case loaded(LoadOutcome, ItemID)
    /// A suspension began, with this id.
    case suspensionBegan(UInt32)
    /// Refused, and why.
    case refused(RequestError)
}

/// How a player's `load` went.
public enum LoadOutcome: Sendable, Equatable {
    /// The group already had a timeline for the item: the player follows it.
    case adopted
    /// The item is new to the group: the player proposed it, and it is now the group's item.
    case proposed
    /// The player plays it for its own user, not coordinated.
    case solo
}

/// Why a request could not be carried out. (The shell words them for people.)
public enum RequestError: Error, Sendable, Equatable {
    /// No player with this id is connected.
    case unknownPlayer
    /// The player, or the group, has no item to act on.
    case noItem
    /// The group plays nothing (a player asked to join it).
    case noGroupItem
    /// No such suspension is active for the player.
    case unknownSuspension(UInt32)
    /// The player has no suspension of its own to end.
    case notSuspended
    /// A rate outside ``Limits/rate``.
    case invalidRate(Double)
    /// A seek past the end of the item (its metadata's duration).
    case positionPastEnd(MediaPosition, duration: TimeSpan)
    /// The item's timeline comes from a peer whose clock is not estimated yet.
    case clockUnknown(PeerID)
}
