/// The group state as the CLI and players see it (`state`, `state_changed`).
public struct GroupStateView: Codable, Sendable, Equatable {
    /// The group's item; null when the group plays nothing.
    public var item: ItemView?
    /// Every item whose timeline the group keeps (the current one included), newest first.
    public var items: [ItemView]
    /// Per replica (a peer's life), how many of its commands this agent has: the version vector.
    public var version: [VersionEntry]
    /// The lead time a command issued here now would get.
    public var leadNs: Int64
    /// Records sent but not yet acknowledged by every peer.
    public var pending: Int
    /// A hash of the group state (every register): equal on every peer once they have
    /// converged, whatever their clocks.
    public var fingerprint: String
    /// The history's bookkeeping (absent from agents before the vector-clock merge).
    public var log: LogView?
    /// The latest commands that were concurrent with others (all applied), oldest first.
    public var concurrent: [ConcurrentView]?

    public init(
        item: ItemView?, items: [ItemView], version: [VersionEntry], leadNs: Int64, pending: Int, fingerprint: String, log: LogView? = nil,
        concurrent: [ConcurrentView]? = nil
    ) {
        self.item = item
        self.items = items
        self.version = version
        self.leadNs = leadNs
        self.pending = pending
        self.fingerprint = fingerprint
        self.log = log
        self.concurrent = concurrent
    }

    enum CodingKeys: String, CodingKey {
        case item, items, version
        case leadNs = "lead_ns"
        case pending, fingerprint, log, concurrent
    }
}

/// The group's history on an agent: how much is not yet stable, and what went past the bounds.
public struct LogView: Codable, Sendable, Equatable {
    /// Commands not yet seen by every member (kept until they are, then folded).
    public var unstable: Int
    /// Commands waiting for one they depend on.
    public var waiting: Int
    /// Members whose knowledge decides stability (this agent included).
    public var members: Int
    /// Commands that arrived after the agent had folded past them (a member away for longer than
    /// the log holds): applied right after the fold.
    public var late: Int
    /// Commands folded before every member had them (the log was full).
    public var forcedFolds: Int

    public init(unstable: Int, waiting: Int, members: Int, late: Int, forcedFolds: Int) {
        self.unstable = unstable
        self.waiting = waiting
        self.members = members
        self.late = late
        self.forcedFolds = forcedFolds
    }

    enum CodingKeys: String, CodingKey {
        case unstable, waiting, members, late
        case forcedFolds = "forced_folds"
    }
}

/// Commands that were concurrent (none of their origins had seen the others'): all applied, in
/// the order they were issued. Event `concurrent_commands` to players, and in the state view.
public struct ConcurrentView: Codable, Sendable, Equatable {
    /// One command of the set.
    public struct Command: Codable, Sendable, Equatable {
        public var item: String?
        public var origin: Origin

        public init(item: String?, origin: Origin) {
            self.item = item
            self.origin = origin
        }
    }

    /// Every command of the set, in the order they were applied (the last one's effect holds
    /// where they touch the same thing).
    public var commands: [Command]

    public init(commands: [Command]) {
        self.commands = commands
    }
}

/// Event `concurrent_commands`: commands from different places crossed (see ``ConcurrentView``).
public struct ConcurrentCommandsEvent: Codable, Sendable, Equatable {
    public var event = "concurrent_commands"
    public var hostTimeNs: Int64
    public var commands: [ConcurrentView.Command]

    public init(hostTimeNs: Int64, commands: [ConcurrentView.Command]) {
        self.hostTimeNs = hostTimeNs
        self.commands = commands
    }

    enum CodingKeys: String, CodingKey {
        case event
        case hostTimeNs = "host_time_ns"
        case commands
    }
}

/// One version-vector entry: a peer's life (incarnation), and how many of its commands.
public struct VersionEntry: Codable, Sendable, Equatable {
    public var peerID: String
    public var name: String
    public var incarnation: UInt64?
    public var counter: UInt64

    public init(peerID: String, name: String, incarnation: UInt64?, counter: UInt64) {
        self.peerID = peerID
        self.name = name
        self.incarnation = incarnation
        self.counter = counter
    }

    enum CodingKeys: String, CodingKey {
        case peerID = "peer_id"
        case name, incarnation, counter
    }
}

/// One item's timeline, on this machine's host clock.
public struct ItemView: Codable, Sendable, Equatable {
    public var id: String
    public var title: String?
    public var artworkURL: String?
    public var durationNs: Int64?
    public var state: TimelineState
    /// The anchor: at `host_time_ns` (CLOCK_MONOTONIC here) the position is `position_ns`,
    /// advancing at `rate` while playing. Null while the origin's clock is not estimated yet.
    public var hostTimeNs: Int64?
    public var positionNs: Int64
    /// The playback rate (the rate to resume at when paused).
    public var rate: Double
    /// The position now, on this machine (null while the anchor cannot be converted).
    public var positionNowNs: Int64?
    /// The anchor on the clock of the peer that issued it.
    public var originTimeNs: Int64
    /// The error bound of the conversion to this machine's clock (ns).
    public var anchorBoundNs: Int64?
    /// The command that set this timeline: who, what, why.
    public var origin: Origin

    public init(id: String, title: String?, artworkURL: String?, durationNs: Int64?, state: TimelineState, hostTimeNs: Int64?, positionNs: Int64, rate: Double, positionNowNs: Int64?, originTimeNs: Int64, anchorBoundNs: Int64?, origin: Origin) {
        self.id = id
        self.title = title
        self.artworkURL = artworkURL
        self.durationNs = durationNs
        self.state = state
        self.hostTimeNs = hostTimeNs
        self.positionNs = positionNs
        self.rate = rate
        self.positionNowNs = positionNowNs
        self.originTimeNs = originTimeNs
        self.anchorBoundNs = anchorBoundNs
        self.origin = origin
    }

    enum CodingKeys: String, CodingKey {
        case id, title
        case artworkURL = "artwork_url"
        case durationNs = "duration_ns"
        case state
        case hostTimeNs = "host_time_ns"
        case positionNs = "position_ns"
        case rate
        case positionNowNs = "position_now_ns"
        case originTimeNs = "origin_time_ns"
        case anchorBoundNs = "anchor_bound_ns"
        case origin
    }
}

/// Who caused a change and how (like AVPlayer's rate-change reasons).
public struct Origin: Codable, Sendable, Equatable {
    /// What the command did.
    public enum Action: String, ClosedStringEnum {
        case load, play, pause, seek, rate, stop
        /// Playback started by itself: every participant became ready, or waiting timed out.
        case start
    }

    public var peerID: String
    public var name: String
    public var action: Action
    /// Why, when not a plain user command: `ready`, `timeout`, `suspension-ended`, …
    public var reason: String?
    /// True when this agent issued it.
    public var local: Bool
    /// The player whose user caused it (its name), when a player did; absent for the CLI, tools
    /// and the agents' own commands (`start`, stall recovery).
    public var player: String?
    /// The command's number at its origin (1, 2, 3, … per agent life). Kept under its version-1
    /// name: before the vector-clock merge it was the command's Lamport counter.
    public var lamport: UInt64
    /// The command's stamp on the group's time scale (ns): with `peer_id`, its place in the
    /// group's one order (absent from agents before the vector-clock merge).
    public var stampTimeNs: Int64?

    public init(peerID: String, name: String, action: Action, reason: String?, local: Bool, player: String? = nil, lamport: UInt64, stampTimeNs: Int64? = nil) {
        self.peerID = peerID
        self.name = name
        self.action = action
        self.reason = reason
        self.local = local
        self.player = player
        self.lamport = lamport
        self.stampTimeNs = stampTimeNs
    }

    enum CodingKeys: String, CodingKey {
        case peerID = "peer_id"
        case name, action, reason, local, player, lamport
        case stampTimeNs = "stamp_time_ns"
    }
}

/// `command`: a transport command for the group, as a user gives it (the CLI's play, pause…).
public struct CommandRequest: Codable, Sendable, Equatable, PlayerRequest {
    public enum Action: String, ClosedStringEnum {
        case play, pause, seek, rate, stop, load
    }

    public var action: Action
    /// For `seek`: the media position (ns).
    public var positionNs: Int64?
    /// For `rate` (and optionally `play`): the playback rate.
    public var rate: Double?
    /// For `load`: the item id (URL or custom identifier). Otherwise: which item (default: the group's).
    public var item: String?
    /// For `load`: metadata shown to others.
    public var title: String?
    public var artworkURL: String?
    public var durationNs: Int64?

    public init(action: Action, positionNs: Int64? = nil, rate: Double? = nil, item: String? = nil, title: String? = nil, artworkURL: String? = nil, durationNs: Int64? = nil) {
        self.action = action
        self.positionNs = positionNs
        self.rate = rate
        self.item = item
        self.title = title
        self.artworkURL = artworkURL
        self.durationNs = durationNs
    }

    enum CodingKeys: String, CodingKey {
        case action
        case positionNs = "position_ns"
        case rate, item, title
        case artworkURL = "artwork_url"
        case durationNs = "duration_ns"
    }

    public func validate() throws(ProtocolError) {
        switch action {
        case .seek where positionNs == nil: throw ProtocolError(.invalidField, "seek needs position_ns")
        case .rate where rate == nil: throw ProtocolError(.invalidField, "rate needs rate")
        case .load where item == nil: throw ProtocolError(.invalidField, "load needs item")
        default: break
        }
        if let item, !(1...512).contains(item.utf8.count) { throw ProtocolError(.invalidField, "item must be 1...512 bytes") }
        try check("position_ns", positionNs, within: PlayerLimits.positionNs)
        try check("rate", rate, within: PlayerLimits.rate)
        try check("duration_ns", durationNs, within: PlayerLimits.positionNs)
    }
}

/// What a monitor can subscribe to.
public enum Topic: String, ClosedStringEnum {
    /// `state_changed`: the group state after each change.
    case state
    /// `peer_changed`: a peer's membership state changed.
    case peers
    /// `players_changed`: a player joined, left or changed on some peer.
    case players
    /// `clock_changed`: every peer's clock estimate, about once a second.
    case clock
    /// `sync_changed`: every player with its sync error (those on other peers included),
    /// about once a second while any player is measured.
    case sync
}

/// `subscribe`: which events a client wants.
public struct SubscribeRequest: Codable, Sendable, Equatable, PlayerRequest {
    public var topics: [Topic]

    public init(topics: [Topic]) {
        self.topics = topics
    }

    public func validate() throws(ProtocolError) {}
}

/// Event `state_changed`: the group state after a change, and the change's origin.
public struct StateChangedEvent: Codable, Sendable, Equatable {
    public var event = "state_changed"
    public var hostTimeNs: Int64
    public enum Change: String, ClosedStringEnum {
        /// An item's timeline.
        case item
        /// The group's item.
        case current
    }

    public var change: Change
    /// The item the change is about.
    public var itemID: String?
    public var origin: Origin
    public var state: GroupStateView
    /// The command crossed others (none of their origins had seen the others'); all applied.
    public var concurrent: ConcurrentView?

    public init(hostTimeNs: Int64, change: Change, itemID: String?, origin: Origin, state: GroupStateView, concurrent: ConcurrentView? = nil) {
        self.hostTimeNs = hostTimeNs
        self.change = change
        self.itemID = itemID
        self.origin = origin
        self.state = state
        self.concurrent = concurrent
    }

    enum CodingKeys: String, CodingKey {
        case event
        case hostTimeNs = "host_time_ns"
        case change
        case itemID = "item_id"
        case origin, state, concurrent
    }
}

/// Event `peer_changed`: a peer's membership state changed.
public struct PeerChangedEvent: Codable, Sendable, Equatable {
    public var event = "peer_changed"
    public var hostTimeNs: Int64
    public var peer: PeerInfo

    public init(hostTimeNs: Int64, peer: PeerInfo) {
        self.hostTimeNs = hostTimeNs
        self.peer = peer
    }

    enum CodingKeys: String, CodingKey {
        case event
        case hostTimeNs = "host_time_ns"
        case peer
    }
}
