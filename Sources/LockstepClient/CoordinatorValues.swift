import LockstepPlayerProtocol

/// A player on the same item as this coordinator's, on any device (SharePlay's
/// `AVCoordinatedPlaybackParticipant`): the agent's view of it (`name`, `peerName`, `readiness`,
/// `suspensionReasons`, `local`, … read through), and ``isMe``: this coordinator's own player.
@dynamicMemberLookup
public struct Participant: Sendable, Equatable {
    public var view: ParticipantView
    public var isMe: Bool

    public init(_ view: ParticipantView, myPlayerID: UInt32?) {
        self.view = view
        isMe = view.local && view.playerID == myPlayerID
    }

    public subscript<T>(dynamicMember field: KeyPath<ParticipantView, T>) -> T { view[keyPath: field] }
}

/// The group's item as a participant proposed it (`item_proposed`), with its metadata (SharePlay's
/// `GroupActivity.metadata`). ``item`` nil: the group stopped.
public struct GroupItem: Sendable, Equatable {
    public var item: String?
    public var title: String?
    public var artworkURL: String?
    public var durationNs: Int64?
    public var originator: Origin?

    public init(item: String?, title: String? = nil, artworkURL: String? = nil, durationNs: Int64? = nil, originator: Origin? = nil) {
        self.item = item
        self.title = title
        self.artworkURL = artworkURL
        self.durationNs = durationNs
        self.originator = originator
    }
}

/// SharePlay's suspension reasons; any other string of 1-32 bytes works too. Agents started with
/// `--waiting-reasons` make the group wait for the reasons they list.
public enum SuspensionReason {
    public static let stallRecovery = "stall-recovery"
    public static let interruption = "interruption"
    public static let userChangingTime = "user-changing-time"
    public static let interstitial = "interstitial"
    public static let userActionRequired = "user-action-required"
}

/// What changed, for the app (``PlaybackCoordinator/changes()``).
public enum CoordinatorChange: Sendable, Equatable {
    /// Every player on this player's item, this one included (``Participant/isMe``).
    case participants([Participant])
    /// The group's item changed; the player may follow it (``PlaybackCoordinator/joinGroup()``).
    case itemProposed(GroupItem)
    /// This player entered or left group playback (a suspension, a solo item, a stall recovery).
    case groupPlayback(active: Bool, reason: String)
    /// One of this player's suspensions began or ended (`by` the player, or the agent's stall recovery).
    case suspension(SuspensionEvent)
    /// Connected to the agent (and restored) or lost it.
    case connection(Bool)
    /// Commands from different places crossed; all were applied, in this order.
    case concurrentCommands([Origin])
}
