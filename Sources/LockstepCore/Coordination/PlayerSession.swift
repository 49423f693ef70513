/// A player connected to this agent, as the ``Coordinator`` coordinates it.
public struct PlayerSession: Sendable {
    /// What a player says about itself in its hello.
    public struct Info: Sendable, Equatable {
        public var name: String
        public var canChangeRate: Bool
        public var exactSeek: Bool
        public var startAtHostTime: Bool
        /// Delay from the player's clock to light and sound: it must be that far ahead.
        public var outputLatency: TimeSpan
        /// How long the player needs between an instruction and acting on it.
        public var startLatency: TimeSpan
        /// How precise its position reports are; errors below this are not corrected.
        public var syncTolerance: TimeSpan

        /// Latencies are clamped to ``Limits/latencyNs`` (the socket refuses wider ones already).
        public init(
            name: String, canChangeRate: Bool = false, exactSeek: Bool = false, startAtHostTime: Bool = false, outputLatency: TimeSpan = .zero,
            startLatency: TimeSpan = .zero, syncTolerance: TimeSpan = .zero
        ) {
            self.name = name
            self.canChangeRate = canChangeRate
            self.exactSeek = exactSeek
            self.startAtHostTime = startAtHostTime
            self.outputLatency = outputLatency.clamped(to: Limits.latencyNs)
            self.startLatency = startLatency.clamped(to: Limits.latencyNs)
            self.syncTolerance = syncTolerance.clamped(to: Limits.latencyNs)
        }
    }

    /// A suspension: the player is out of group playback while it lasts.
    public struct Suspension: Sendable, Equatable {
        public var id: UInt32
        public var reason: SuspensionReason
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
    public var lastReport: (position: MediaPosition, at: LocalTime)?
    public internal(set) var sync: SyncPolicy
    var nextSuspensionID: UInt32 = 1
    /// What the player was last told, so that it is told again only when something changed.
    var toldTimeline: Stamp?
    /// When the player was told to act on that timeline: its instant, or later for a timeline
    /// learnt late (joined where the group is then). Reports from before say nothing of the join.
    var toldAt: LocalTime?
    var toldWaitingFor: [WaitingFor]?
    var toldParticipants: [ParticipantInfo]?
    var toldProposal: Stamp?
    /// Whether it was last told it is in group playback.
    public internal(set) var inGroupPlayback = false

    init(id: UInt32, info: Info, sync: SyncPolicy.Configuration) {
        self.id = id
        self.info = info
        var c = sync
        // A player whose reports are coarse is not chased for errors it cannot see.
        c.start = max(c.start, info.syncTolerance)
        c.settle = max(c.settle, info.syncTolerance / 3)
        c.seekOnlyAbove = max(c.seekOnlyAbove, 2 * info.syncTolerance)
        self.sync = SyncPolicy(configuration: c)
    }

    /// Suspended by anything but the agent's own stall recovery.
    public var suspendedByPlayer: Bool { suspensions.contains { !$0.imposed } }
    public var isSuspended: Bool { !suspensions.isEmpty }

    /// As other peers see it.
    var status: PlayerStatus {
        PlayerStatus(
            playerID: id, name: info.name, itemHash: item?.stableHash, solo: solo, readiness: readiness, suspensions: suspensions.map(\.reason),
            outputLatency: info.outputLatency, startLatency: info.startLatency)
    }

    /// The next suspension id (they wrap after 2³² suspensions; an old one is long gone by then).
    mutating func newSuspensionID() -> UInt32 {
        defer { nextSuspensionID = nextSuspensionID == .max ? 1 : nextSuspensionID + 1 }
        return nextSuspensionID
    }
}
