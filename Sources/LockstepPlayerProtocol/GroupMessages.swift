/// The group state as the CLI and players see it (`state`, `state_changed`).
public struct GroupStateView: Codable, Sendable, Equatable {
    /// The group's item; null when the group plays nothing.
    public var item: ItemView?
    /// Every item whose timeline the group keeps (the current one included), newest first.
    public var items: [ItemView]
    /// Per origin peer, the largest command counter seen (the group's version vector).
    public var version: [VersionEntry]
    /// The lead time a command issued here now would get.
    public var leadNs: Int64
    /// Records sent but not yet acknowledged by every peer.
    public var pending: Int
    /// A hash of the replicated state (every record, byte for byte): equal on every peer once
    /// they have converged, whatever their clocks.
    public var fingerprint: String

    public init(item: ItemView?, items: [ItemView], version: [VersionEntry], leadNs: Int64, pending: Int, fingerprint: String) {
        self.item = item
        self.items = items
        self.version = version
        self.leadNs = leadNs
        self.pending = pending
        self.fingerprint = fingerprint
    }

    enum CodingKeys: String, CodingKey {
        case item, items, version
        case leadNs = "lead_ns"
        case pending, fingerprint
    }
}

/// One version-vector entry.
public struct VersionEntry: Codable, Sendable, Equatable {
    public var peerID: String
    public var name: String
    public var counter: UInt64

    public init(peerID: String, name: String, counter: UInt64) {
        self.peerID = peerID
        self.name = name
        self.counter = counter
    }

    enum CodingKeys: String, CodingKey {
        case peerID = "peer_id"
        case name, counter
    }
}

/// One item's timeline, on this machine's host clock.
public struct ItemView: Codable, Sendable, Equatable {
    public var id: String
    public var title: String?
    public var artworkURL: String?
    public var durationNs: Int64?
    /// `stopped`, `paused`, `waiting` or `playing`.
    public var state: String
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

    public init(id: String, title: String?, artworkURL: String?, durationNs: Int64?, state: String, hostTimeNs: Int64?, positionNs: Int64, rate: Double, positionNowNs: Int64?, originTimeNs: Int64, anchorBoundNs: Int64?, origin: Origin) {
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
    public var peerID: String
    public var name: String
    /// `load`, `play`, `pause`, `seek`, `rate`, `stop`, `start`.
    public var action: String
    /// Why, when not a plain user command: `ready`, `timeout`, `suspension-ended`, …
    public var reason: String?
    /// True when this agent issued it.
    public var local: Bool
    /// The command's Lamport counter (its place in the group's order).
    public var lamport: UInt64

    public init(peerID: String, name: String, action: String, reason: String?, local: Bool, lamport: UInt64) {
        self.peerID = peerID
        self.name = name
        self.action = action
        self.reason = reason
        self.local = local
        self.lamport = lamport
    }

    enum CodingKeys: String, CodingKey {
        case peerID = "peer_id"
        case name, action, reason, local, lamport
    }
}

/// `command`: a transport command for the group, as a user gives it (the CLI's play, pause…).
public struct CommandRequest: Codable, Sendable, Equatable {
    /// `play`, `pause`, `seek`, `rate`, `stop` or `load`.
    public var action: String
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

    public init(action: String, positionNs: Int64? = nil, rate: Double? = nil, item: String? = nil, title: String? = nil, artworkURL: String? = nil, durationNs: Int64? = nil) {
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
}

/// `subscribe`: which events a client wants (`state`, `peers`, `players`).
public struct SubscribeRequest: Codable, Sendable, Equatable {
    public var topics: [String]

    public init(topics: [String]) {
        self.topics = topics
    }
}

/// Event `state_changed`: the group state after a change, and the change's origin.
public struct StateChangedEvent: Codable, Sendable, Equatable {
    public var event = "state_changed"
    public var hostTimeNs: Int64
    /// What changed: `item` (a timeline) or `current` (the group's item).
    public var change: String
    /// The item the change is about.
    public var itemID: String?
    public var origin: Origin
    public var state: GroupStateView

    public init(hostTimeNs: Int64, change: String, itemID: String?, origin: Origin, state: GroupStateView) {
        self.hostTimeNs = hostTimeNs
        self.change = change
        self.itemID = itemID
        self.origin = origin
        self.state = state
    }

    enum CodingKeys: String, CodingKey {
        case event
        case hostTimeNs = "host_time_ns"
        case change
        case itemID = "item_id"
        case origin, state
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
