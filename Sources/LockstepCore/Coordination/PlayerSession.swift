/// A player connected to this agent, as the node coordinates it.
public struct PlayerSession: Sendable {
    /// What a player says about itself in its hello.
    public struct Info: Sendable, Equatable {
        public var name: String
        public var canChangeRate: Bool
        public var exactSeek: Bool
        public var startAtHostTime: Bool
        /// Delay from the player's clock to light and sound (ns): it must be that far ahead.
        public var outputLatencyNs: Int64
        /// How long the player needs between an instruction and acting on it (ns).
        public var startLatencyNs: Int64
        /// How precise its position reports are (ns); errors below this are not corrected.
        public var syncToleranceNs: Int64

        public init(name: String, canChangeRate: Bool = false, exactSeek: Bool = false, startAtHostTime: Bool = false, outputLatencyNs: Int64 = 0, startLatencyNs: Int64 = 0, syncToleranceNs: Int64 = 0) {
            self.name = name
            self.canChangeRate = canChangeRate
            self.exactSeek = exactSeek
            self.startAtHostTime = startAtHostTime
            self.outputLatencyNs = max(0, outputLatencyNs)
            self.startLatencyNs = max(0, startLatencyNs)
            self.syncToleranceNs = max(0, syncToleranceNs)
        }
    }

    /// A suspension: the player is out of group playback while it lasts.
    public struct Suspension: Sendable, Equatable {
        public var id: UInt32
        public var reason: String
        /// Imposed by the agent (stall recovery), not begun by the player.
        public var imposed: Bool
    }

    public let id: UInt32
    public var info: Info
    public var item: ItemID?
    public var metadata = ItemMetadata()
    public var solo = false
    public var readiness: PlayerStatus.Readiness = .loading
    public var suspensions: [Suspension] = []
    public var lastReport: (position: Int64, at: Int64)?
    public internal(set) var sync: SyncPolicy
    var nextSuspensionID: UInt32 = 1
    /// What the player was last told, so that it is told again only when something changed.
    var toldTimeline: Stamp?
    var toldWaitingFor: [WaitingFor]?
    var toldParticipants: [ParticipantInfo]?
    var toldProposal: Stamp?
    var inGroupPlayback = false

    init(id: UInt32, info: Info, sync: SyncPolicy.Configuration) {
        self.id = id
        self.info = info
        var c = sync
        // A player whose reports are coarse is not chased for errors it cannot see.
        c.startNs = max(c.startNs, info.syncToleranceNs)
        c.settleNs = max(c.settleNs, info.syncToleranceNs / 3)
        c.seekOnlyAboveNs = max(c.seekOnlyAboveNs, 2 * info.syncToleranceNs)
        self.sync = SyncPolicy(configuration: c)
    }

    /// Suspended by anything but the agent's own stall recovery.
    public var suspendedByPlayer: Bool { suspensions.contains { !$0.imposed } }
    public var isSuspended: Bool { !suspensions.isEmpty }

    /// As other peers see it.
    var status: PlayerStatus {
        PlayerStatus(playerID: id, name: info.name, itemHash: item?.stableHash, solo: solo, readiness: readiness, suspensions: suspensions.map(\.reason), outputLatencyNs: info.outputLatencyNs, startLatencyNs: info.startLatencyNs)
    }
}

/// Who a waiting group waits for.
public struct WaitingFor: Sendable, Equatable, Hashable {
    public var peer: PeerID
    public var playerID: UInt32
    public var name: String
    /// `loading`, `buffering`, or the suspension reason that makes the group wait.
    public var why: String
}

/// A participant of group playback on an item, for the players' participant lists.
public struct ParticipantInfo: Sendable, Equatable, Hashable {
    public var peer: PeerID
    public var playerID: UInt32
    public var name: String
    public var readiness: PlayerStatus.Readiness
    public var suspensions: [String]
    public var local: Bool
}

/// What the node tells a local player.
public enum PlayerInstruction: Sendable, Equatable {
    /// Be at `position` with `rate` at local time `at` (output latency already folded in), in
    /// `phase`; `record` is the command that set it (who and why).
    case timeline(item: ItemID, phase: Timeline.Phase, position: Int64, rate: Double, at: Int64, record: ItemRecord)
    /// The group waits (for the players listed) before playing from `position`: hold there from
    /// local time `at` (which is now or soon, when a playing group is being held).
    case wait(item: ItemID, position: Int64, at: Int64, waitingFor: [WaitingFor], record: ItemRecord)
    /// A correction to stay on the timeline.
    case correction(SyncPolicy.Correction)
    /// Who else plays this item, and how they are doing.
    case participants(item: ItemID, [ParticipantInfo])
    /// The group's item changed (the player may follow it or not).
    case itemProposed(CurrentRecord)
    /// The player entered or left group playback.
    case groupPlayback(active: Bool, reason: String)
    /// A suspension of this player began or ended.
    case suspension(began: Bool, id: UInt32, reason: String, imposed: Bool)
}
