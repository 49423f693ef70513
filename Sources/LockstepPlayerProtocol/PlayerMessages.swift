// Requests a player sends (after `hello` with role "player"), and the events it receives.
// Field names are the protocol's; see Protocol/player-protocol.md.

/// `load`: the player's current item.
public struct LoadRequest: Codable, Sendable, Equatable {
    /// The item's identity: its URL, or a custom identifier shared by every device.
    public var item: String
    /// `group` (default): play it with the group, adopting the group's timeline for it or
    /// proposing it to the group; `solo`: play it for this player's user alone.
    public var share: String?
    public var title: String?
    public var artworkURL: String?
    public var durationNs: Int64?

    public init(item: String, share: String? = nil, title: String? = nil, artworkURL: String? = nil, durationNs: Int64? = nil) {
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
}

/// The reply to `load` and `join_group`.
public struct LoadResult: Codable, Sendable, Equatable {
    /// `adopted` (the group had a timeline for it), `proposed` (it is now the group's item) or `solo`.
    public var outcome: String
    public var item: String

    public init(outcome: String, item: String) {
        self.outcome = outcome
        self.item = item
    }
}

/// `intent`: the user's action in the player's own UI.
public struct IntentRequest: Codable, Sendable, Equatable {
    /// `play`, `pause`, `seek` or `rate`.
    public var action: String
    public var positionNs: Int64?
    public var rate: Double?

    public init(action: String, positionNs: Int64? = nil, rate: Double? = nil) {
        self.action = action
        self.positionNs = positionNs
        self.rate = rate
    }

    enum CodingKeys: String, CodingKey {
        case action
        case positionNs = "position_ns"
        case rate
    }
}

/// `position`: at host time `host_time_ns` the player was at `position_ns` (usually sent
/// without `request_id`, several times a second while playing).
public struct PositionReport: Codable, Sendable, Equatable {
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
}

/// `begin_suspension`.
public struct BeginSuspensionRequest: Codable, Sendable, Equatable {
    /// `stall-recovery`, `interruption`, `user-changing-time`, `interstitial`,
    /// `user-action-required`, or any custom string (at most 32 bytes).
    public var reason: String

    public init(reason: String) {
        self.reason = reason
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
public struct EndSuspensionRequest: Codable, Sendable, Equatable {
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
}

/// `play_immediately`: start now without waiting for the others.
public struct PlayImmediatelyRequest: Codable, Sendable, Equatable {
    public var rate: Double?

    public init(rate: Double? = nil) {
        self.rate = rate
    }
}

/// The reply to `playback_status`: is this player in group playback, and if not, why.
public struct PlaybackStatus: Codable, Sendable, Equatable {
    public var item: String?
    public var share: String
    public var readiness: String
    public var inGroupPlayback: Bool
    public var suspensionReasons: [String]
    /// The timeline the player follows (null when not in group playback).
    public var timeline: ItemView?
    public var participants: [ParticipantView]

    public init(item: String?, share: String, readiness: String, inGroupPlayback: Bool, suspensionReasons: [String], timeline: ItemView?, participants: [ParticipantView]) {
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
    public var readiness: String
    public var suspensionReasons: [String]
    public var local: Bool

    public init(peerID: String, peerName: String, playerID: UInt32, name: String, readiness: String, suspensionReasons: [String], local: Bool) {
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

/// Event `timeline`: be at `position_ns` with `rate` at host time `host_time_ns`, in `state`
/// (`playing`, `paused`, `stopped`). Output latency is already folded in: present
/// `position_ns` at `host_time_ns` on the player's own clock.
public struct TimelineEvent: Codable, Sendable, Equatable {
    public var event = "timeline"
    public var item: String
    public var state: String
    public var positionNs: Int64
    public var rate: Double
    public var hostTimeNs: Int64
    /// Who caused this and how (like AVPlayer's rate-change reasons).
    public var origin: Origin

    public init(item: String, state: String, positionNs: Int64, rate: Double, hostTimeNs: Int64, origin: Origin) {
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
    public var event = "correction"
    public var kind: String
    public var rate: Double?
    public var untilHostTimeNs: Int64?
    public var positionNs: Int64?
    public var hostTimeNs: Int64?
    /// The error being corrected: player position minus timeline (ns).
    public var errorNs: Int64

    public init(kind: String, rate: Double? = nil, untilHostTimeNs: Int64? = nil, positionNs: Int64? = nil, hostTimeNs: Int64? = nil, errorNs: Int64) {
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
    public var event = "suspension"
    /// `began` or `ended`.
    public var change: String
    public var suspensionID: UInt32
    public var reason: String
    public var by: String

    public init(change: String, suspensionID: UInt32, reason: String, by: String) {
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

/// Event `players_changed` (topic `players`): every player on every peer, after a change.
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
