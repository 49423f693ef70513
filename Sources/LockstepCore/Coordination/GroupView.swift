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

    public init(
        me: PeerID, state: GroupState, participants: [PeerID: ParticipantRecord], reachable: Set<PeerID>, timelines: LocalTimelines,
        ackDelays: AckDelays = AckDelays()
    ) {
        self.me = me
        self.state = state
        self.participants = participants
        self.reachable = reachable
        self.timelines = timelines
        self.ackDelays = ackDelays
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
