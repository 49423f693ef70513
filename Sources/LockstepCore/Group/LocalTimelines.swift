/// The group's timelines on this node's clock: a record's anchor is on its origin's clock, and
/// moves onto the local clock only through an estimate of that clock (directly, through the
/// mesh, or through the peer that relayed the record), with the estimate's error bound.
///
/// A read-only view over ``PeerClocks`` and the relay anchors ``Dissemination`` keeps; ``Node``
/// builds one where a conversion is needed.
public struct LocalTimelines: Sendable {
    public let me: PeerID
    let clocks: PeerClocks
    let relays: [Stamp: RelayedAnchor]

    public init(me: PeerID, clocks: PeerClocks, relays: [Stamp: RelayedAnchor]) {
        self.me = me
        self.clocks = clocks
        self.relays = relays
    }

    /// The anchor time of `record` on the local clock, with its error bound; nil while no
    /// estimate of the origin's clock exists (directly, through the mesh, or through the peer
    /// that relayed the record). Until then the record cannot be followed: players wait.
    public func anchor(of record: ItemRecord, now: LocalTime) -> (time: LocalTime, bound: TimeSpan)? {
        let origin = record.stamp.origin
        if origin == me { return (LocalTime(ours: record.timeline.anchorTime), .zero) }
        // The bound is the estimate's at the converted instant: it grows away from the samples.
        if let r = clocks.resolved(origin, at: now) {
            let t = r.estimate.localTime(at: record.timeline.anchorTime)
            return (t, r.estimate.errorBoundSpan(at: t))
        }
        if let relay = relays[record.stamp], let r = clocks.resolved(relay.via, at: now) {
            let t = r.estimate.localTime(at: relay.anchorTime)
            return (t, r.estimate.errorBoundSpan(at: t) + relay.bound)
        }
        return nil
    }

    /// The record's timeline on the local clock, or nil (see ``anchor(of:now:)``).
    ///
    /// A playing timeline that started in the past is re-anchored at `now` (converting `now` to
    /// the origin's clock, where the estimate is freshest, rather than an anchor seconds old), and
    /// its rate is scaled by the origin's clock rate relative to ours, so that every peer advances
    /// at the origin's pace.
    public func timeline(of record: ItemRecord, now: LocalTime) -> Timeline<LocalTime>? {
        let t = record.timeline
        let origin = record.stamp.origin
        if origin == me { return t.moved(to: LocalTime(ours: t.anchorTime)) }
        guard let anchor = anchor(of: record, now: now) else { return nil }
        let local = t.moved(to: anchor.time)
        guard t.phase == .playing, let estimate = clocks.resolved(origin, at: now)?.estimate else { return local }
        let scaled = t.rate * (1 + estimate.skewPPM * 1e-6)
        if anchor.time >= now {
            return Timeline(phase: .playing, anchorTime: anchor.time, position: t.position, rate: scaled)
        }
        let originNow = estimate.peerTime(at: now)
        return Timeline(phase: .playing, anchorTime: now, position: t.position(at: originNow), rate: scaled)
    }
}
