/// What the ``Coordinator`` reads of the rest of its node, at one instant: the replicated group
/// state, every peer's players, who is reachable, and how to put a timeline on the local clock.
/// A read-only snapshot that ``Node`` builds for each coordinator input; tests build their own.
public struct GroupView: Sendable {
    public let me: PeerID
    public let state: GroupState
    public let participants: [PeerID: ParticipantRecord]
    public let reachable: Set<PeerID>
    public let timelines: LocalTimelines
    /// How long peers took to acknowledge this node's operations.
    public let ackDelays: AckDelays
    /// Which ``participants`` and ``reachable`` these are: views with equal versions hold equal
    /// ones, so what is derived from them alone (``Coordinator/participants(on:view:)``) may be
    /// kept. Nil for a view whose sources do not count their changes: nothing is kept.
    public let presenceVersion: PresenceVersion?

    /// The change counts of a node's participant records and of its reachable set.
    public struct PresenceVersion: Sendable, Hashable {
        public var participants: UInt64
        public var reachable: UInt64

        public init(participants: UInt64, reachable: UInt64) {
            self.participants = participants
            self.reachable = reachable
        }
    }

    public init(
        me: PeerID, state: GroupState, participants: [PeerID: ParticipantRecord], reachable: Set<PeerID>, timelines: LocalTimelines,
        ackDelays: AckDelays = AckDelays(), presenceVersion: PresenceVersion? = nil
    ) {
        self.me = me
        self.state = state
        self.participants = participants
        self.reachable = reachable
        self.timelines = timelines
        self.ackDelays = ackDelays
        self.presenceVersion = presenceVersion
    }

    /// This node, or a reachable peer.
    public func isPresent(_ peer: PeerID) -> Bool {
        peer == me || reachable.contains(peer)
    }

    /// The estimate of `peer`'s clock to convert with (see ``PeerClocks/resolved(_:at:)``).
    func resolvedClock(of peer: PeerID, at now: LocalTime) -> ClockEstimate? {
        timelines.clocks.resolved(peer, at: now)?.estimate
    }
}
