// Requests a player sends (after `hello` with role "player"), and the events it receives.
// Field names are the protocol's; see Protocol/player-protocol.md.

/// With whom a player plays its item.
public enum Share: String, ClosedStringEnum {
    /// With the group: adopting the group's timeline for the item, or proposing the item to it.
    case group
    /// For this player's user alone, not coordinated.
    case solo
}

/// `load`: the player's current item.
public struct LoadRequest: Codable, Sendable, Equatable, PlayerRequest {
    /// The item's identity: its URL, or a custom identifier shared by every device.
    public var item: String
    /// Default ``Share/group``.
    public var share: Share?
    public var title: String?
    public var artworkURL: String?
    public var durationNs: Int64?

    public init(item: String, share: Share? = nil, title: String? = nil, artworkURL: String? = nil, durationNs: Int64? = nil) {
        self.item = item
        self.share = share
        self.title = title
        self.artworkURL = artworkURL
        self.durationNs = durationNs
    }

    enum CodingKeys: String, CodingKey {
        case item, share, title
        case artworkURL = "artwork_url"
        case durationNs = "duration_ns"
    }

    public func validate() throws(ProtocolError) {
        guard (1...512).contains(item.utf8.count) else { throw ProtocolError(.invalidField, "item must be 1...512 bytes") }
        try check("duration_ns", durationNs, within: PlayerLimits.positionNs)
    }
}

/// How a `load` went.
public enum LoadOutcomeName: String, ClosedStringEnum {
    /// The group had a timeline for the item: the player follows it.
    case adopted
    /// The item is now the group's item.
    case proposed
    /// The player plays it alone.
    case solo
}

/// The reply to `load` and `join_group`.
public struct LoadResult: Codable, Sendable, Equatable {
    public var outcome: LoadOutcomeName
    public var item: String

    public init(outcome: LoadOutcomeName, item: String) {
        self.outcome = outcome
        self.item = item
    }
}

/// What a user did in a player's own UI.
public enum IntentAction: String, ClosedStringEnum {
    case play, pause, seek, rate
}

/// `intent`: the user's action in the player's own UI.
public struct IntentRequest: Codable, Sendable, Equatable, PlayerRequest {
    public var action: IntentAction
    /// For `seek`: where to.
    public var positionNs: Int64?
    /// For `rate`, and optionally `play`.
    public var rate: Double?

    public init(action: IntentAction, positionNs: Int64? = nil, rate: Double? = nil) {
        self.action = action
        self.positionNs = positionNs
        self.rate = rate
    }

    enum CodingKeys: String, CodingKey {
        case action
        case positionNs = "position_ns"
        case rate
    }

    public func validate() throws(ProtocolError) {
        if action == .seek && positionNs == nil { throw ProtocolError(.invalidField, "seek needs position_ns") }
        if action == .rate && rate == nil { throw ProtocolError(.invalidField, "rate needs rate") }
        try check("position_ns", positionNs, within: PlayerLimits.positionNs)
        try check("rate", rate, within: PlayerLimits.rate)
    }
}

/// `position`: at host time `host_time_ns` the player was at `position_ns` (usually sent
/// without `request_id`, several times a second while playing).
public struct PositionReport: Codable, Sendable, Equatable, PlayerRequest {
    public var positionNs: Int64
    public var hostTimeNs: Int64

    public init(positionNs: Int64, hostTimeNs: Int64) {
        self.positionNs = positionNs
        self.hostTimeNs = hostTimeNs
    }

    enum CodingKeys: String, CodingKey {
        case positionNs = "position_ns"
        case hostTimeNs = "host_time_ns"
    }

    public func validate() throws(ProtocolError) {
        try check("position_ns", positionNs, within: PlayerLimits.positionNs)
        try check("host_time_ns", hostTimeNs, within: PlayerLimits.hostTimeNs)
    }
}

/// `begin_suspension`.
public struct BeginSuspensionRequest: Codable, Sendable, Equatable, PlayerRequest {
    /// `stall-recovery`, `interruption`, `user-changing-time`, `interstitial`,
    /// `user-action-required`, or any custom string (1 to 32 bytes).
    public var reason: String

    public init(reason: String) {
        self.reason = reason
    }

    public func validate() throws(ProtocolError) {
        guard PlayerLimits.reasonBytes.contains(reason.utf8.count) else {
            throw ProtocolError(.invalidField, "reason must be 1...32 bytes")
        }
    }
}

public struct BeginSuspensionResult: Codable, Sendable, Equatable {
    public var suspensionID: UInt32

    public init(suspensionID: UInt32) {
        self.suspensionID = suspensionID
    }

    enum CodingKeys: String, CodingKey {
        case suspensionID = "suspension_id"
    }
}

/// `end_suspension`, optionally proposing a new time to the whole group.
public struct EndSuspensionRequest: Codable, Sendable, Equatable, PlayerRequest {
    public var suspensionID: UInt32
    public var proposePositionNs: Int64?

    public init(suspensionID: UInt32, proposePositionNs: Int64? = nil) {
        self.suspensionID = suspensionID
        self.proposePositionNs = proposePositionNs
    }

    enum CodingKeys: String, CodingKey {
        case suspensionID = "suspension_id"
        case proposePositionNs = "propose_position_ns"
    }

    public func validate() throws(ProtocolError) {
        try check("propose_position_ns", proposePositionNs, within: PlayerLimits.positionNs)
    }
}

/// `play_immediately`: start now without waiting for the others.
public struct PlayImmediatelyRequest: Codable, Sendable, Equatable, PlayerRequest {
    public var rate: Double?

    public init(rate: Double? = nil) {
        self.rate = rate
    }

    public func validate() throws(ProtocolError) {
        try check("rate", rate, within: PlayerLimits.rate)
    }
}

/// The reply to `playback_status`: is this player in group playback, and if not, why.
public struct PlaybackStatus: Codable, Sendable, Equatable {
    public var item: String?
    public var share: Share
    public var readiness: Readiness
    public var inGroupPlayback: Bool
    public var suspensionReasons: [String]
    /// The timeline the player follows (null when not in group playback).
    public var timeline: ItemView?
    public var participants: [ParticipantView]

    public init(item: String?, share: Share, readiness: Readiness, inGroupPlayback: Bool, suspensionReasons: [String], timeline: ItemView?, participants: [ParticipantView]) {
        self.item = item
        self.share = share
        self.readiness = readiness
        self.inGroupPlayback = inGroupPlayback
        self.suspensionReasons = suspensionReasons
        self.timeline = timeline
        self.participants = participants
    }

    enum CodingKeys: String, CodingKey {
        case item, share, readiness
        case inGroupPlayback = "in_group_playback"
        case suspensionReasons = "suspension_reasons"
        case timeline, participants
    }
}

/// A participant of group playback (a player on some peer).
public struct ParticipantView: Codable, Sendable, Equatable {
    public var peerID: String
    public var peerName: String
    public var playerID: UInt32
    public var name: String
    public var readiness: Readiness
    public var suspensionReasons: [String]
    public var local: Bool

    public init(peerID: String, peerName: String, playerID: UInt32, name: String, readiness: Readiness, suspensionReasons: [String], local: Bool) {
        self.peerID = peerID
        self.peerName = peerName
        self.playerID = playerID
        self.name = name
        self.readiness = readiness
        self.suspensionReasons = suspensionReasons
        self.local = local
    }

    enum CodingKeys: String, CodingKey {
        case peerID = "peer_id"
        case peerName = "peer_name"
        case playerID = "player_id"
        case name, readiness
        case suspensionReasons = "suspension_reasons"
        case local
    }
}

/// `players`: every player on every peer, for the CLI.
public struct PlayersResult: Codable, Sendable, Equatable {
    public var players: [ParticipantWithItem]

    public init(players: [ParticipantWithItem]) {
        self.players = players
    }
}

public struct ParticipantWithItem: Codable, Sendable, Equatable {
    public var participant: ParticipantView
    /// The item, when this agent knows it by name (else its 64-bit hash in hex).
    public var item: String?
    public var solo: Bool
    public var outputLatencyNs: Int64
    public var startLatencyNs: Int64
    /// For local players: the last sync error (position − timeline, ns).
    public var syncErrorNs: Int64?

    public init(participant: ParticipantView, item: String?, solo: Bool, outputLatencyNs: Int64, startLatencyNs: Int64, syncErrorNs: Int64?) {
        self.participant = participant
        self.item = item
        self.solo = solo
        self.outputLatencyNs = outputLatencyNs
        self.startLatencyNs = startLatencyNs
        self.syncErrorNs = syncErrorNs
    }

    enum CodingKeys: String, CodingKey {
        case participant, item, solo
        case outputLatencyNs = "output_latency_ns"
        case startLatencyNs = "start_latency_ns"
        case syncErrorNs = "sync_error_ns"
    }
}

// MARK: - Events to players

/// Whether a player can play its item.
public enum Readiness: String, ClosedStringEnum {
    case loading, ready, buffering
}

/// What a timeline does: `waiting` only appears in state views (players get `wait` events).
public enum TimelineState: String, ClosedStringEnum {
    case stopped, paused, waiting, playing
}

/// Event `timeline`: be at `position_ns` with `rate` at host time `host_time_ns`, in `state`
/// (`playing`, `paused`, `stopped`). Output latency is already folded in: present
/// `position_ns` at `host_time_ns` on the player's own clock.
public struct TimelineEvent: Codable, Sendable, Equatable {
    public var event = "timeline"
    public var item: String
    public var state: TimelineState
    public var positionNs: Int64
    public var rate: Double
    public var hostTimeNs: Int64
    /// Who caused this and how (like AVPlayer's rate-change reasons).
    public var origin: Origin

    public init(item: String, state: TimelineState, positionNs: Int64, rate: Double, hostTimeNs: Int64, origin: Origin) {
        self.item = item
        self.state = state
        self.positionNs = positionNs
        self.rate = rate
        self.hostTimeNs = hostTimeNs
        self.origin = origin
    }

    enum CodingKeys: String, CodingKey {
        case event, item, state
        case positionNs = "position_ns"
        case rate
        case hostTimeNs = "host_time_ns"
        case origin
    }
}

/// Event `wait`: the group waits for the participants listed; hold at `position_ns` from
/// `host_time_ns` (show a spinner).
public struct WaitEvent: Codable, Sendable, Equatable {
    public var event = "wait"
    public var item: String
    public var positionNs: Int64
    public var hostTimeNs: Int64
    public var waitingFor: [WaitingForView]
    public var origin: Origin

    public init(item: String, positionNs: Int64, hostTimeNs: Int64, waitingFor: [WaitingForView], origin: Origin) {
        self.item = item
        self.positionNs = positionNs
        self.hostTimeNs = hostTimeNs
        self.waitingFor = waitingFor
        self.origin = origin
    }

    enum CodingKeys: String, CodingKey {
        case event, item
        case positionNs = "position_ns"
        case hostTimeNs = "host_time_ns"
        case waitingFor = "waiting_for"
        case origin
    }
}

public struct WaitingForView: Codable, Sendable, Equatable {
    public var peerName: String
    public var player: String
    /// `loading`, `buffering`, or the suspension reason that makes the group wait.
    public var why: String

    public init(peerName: String, player: String, why: String) {
        self.peerName = peerName
        self.player = player
        self.why = why
    }

    enum CodingKeys: String, CodingKey {
        case peerName = "peer_name"
        case player, why
    }
}

/// Event `correction`: `kind` `rate` (play at `rate` until `until_host_time_ns`, then back to the
/// timeline's rate) or `seek` (be at `position_ns` at `host_time_ns`, exactly).
public struct CorrectionEvent: Codable, Sendable, Equatable {
    public enum Kind: String, ClosedStringEnum {
        /// Play at `rate` until `until_host_time_ns`.
        case rate
        /// Be at `position_ns` at `host_time_ns`, exactly.
        case seek
    }

    public var event = "correction"
    public var kind: Kind
    public var rate: Double?
    public var untilHostTimeNs: Int64?
    public var positionNs: Int64?
    public var hostTimeNs: Int64?
    /// The error being corrected: player position minus timeline (ns).
    public var errorNs: Int64

    public init(kind: Kind, rate: Double? = nil, untilHostTimeNs: Int64? = nil, positionNs: Int64? = nil, hostTimeNs: Int64? = nil, errorNs: Int64) {
        self.kind = kind
        self.rate = rate
        self.untilHostTimeNs = untilHostTimeNs
        self.positionNs = positionNs
        self.hostTimeNs = hostTimeNs
        self.errorNs = errorNs
    }

    enum CodingKeys: String, CodingKey {
        case event, kind, rate
        case untilHostTimeNs = "until_host_time_ns"
        case positionNs = "position_ns"
        case hostTimeNs = "host_time_ns"
        case errorNs = "error_ns"
    }
}

/// Event `participants`: who plays this player's item with it.
public struct ParticipantsEvent: Codable, Sendable, Equatable {
    public var event = "participants"
    public var item: String
    public var participants: [ParticipantView]

    public init(item: String, participants: [ParticipantView]) {
        self.item = item
        self.participants = participants
    }
}

/// Event `item_proposed`: the group's item changed; the player may follow it (`join_group`) or not.
public struct ItemProposedEvent: Codable, Sendable, Equatable {
    public var event = "item_proposed"
    /// Null when the group stopped.
    public var item: String?
    public var title: String?
    public var artworkURL: String?
    public var durationNs: Int64?
    public var origin: Origin

    public init(item: String?, title: String?, artworkURL: String?, durationNs: Int64?, origin: Origin) {
        self.item = item
        self.title = title
        self.artworkURL = artworkURL
        self.durationNs = durationNs
        self.origin = origin
    }

    enum CodingKeys: String, CodingKey {
        case event, item, title
        case artworkURL = "artwork_url"
        case durationNs = "duration_ns"
        case origin
    }
}

/// Event `group_playback`: the player entered or left group playback.
public struct GroupPlaybackEvent: Codable, Sendable, Equatable {
    public var event = "group_playback"
    public var active: Bool
    public var reason: String

    public init(active: Bool, reason: String) {
        self.active = active
        self.reason = reason
    }
}

/// Event `suspension`: one of this player's suspensions began or ended (`by`: `player` or
/// `agent`, for the agent's stall recovery).
public struct SuspensionEvent: Codable, Sendable, Equatable {
    public enum Change: String, ClosedStringEnum { case began, ended }
    /// Who began it: the player, or the agent (stall recovery).
    public enum By: String, ClosedStringEnum { case player, agent }

    public var event = "suspension"
    public var change: Change
    public var suspensionID: UInt32
    public var reason: String
    public var by: By

    public init(change: Change, suspensionID: UInt32, reason: String, by: By) {
        self.change = change
        self.suspensionID = suspensionID
        self.reason = reason
        self.by = by
    }

    enum CodingKeys: String, CodingKey {
        case event, change
        case suspensionID = "suspension_id"
        case reason, by
    }
}

/// Event `players_changed` (topic `players`): every player on every peer, after a change. The
/// same shape is `sync_changed` (topic `sync`, ``syncChanged(hostTimeNs:players:)``).
public struct PlayersChangedEvent: Codable, Sendable, Equatable {
    public var event = "players_changed"
    public var hostTimeNs: Int64
    public var players: [ParticipantWithItem]

    public init(hostTimeNs: Int64, players: [ParticipantWithItem]) {
        self.hostTimeNs = hostTimeNs
        self.players = players
    }

    enum CodingKeys: String, CodingKey {
        case event
        case hostTimeNs = "host_time_ns"
        case players
    }
}
