/// The group's timelines on this node's clock: a register's anchor is on the clock it names
/// (the basis of the operation that set it), and moves onto the local clock only through an
/// estimate of that clock (directly or through the mesh), or of the clock of the operation's
/// origin (its alternate anchor), with the estimate's error bound.
///
/// A read-only view over ``PeerClocks``; ``Node`` builds one where a conversion is needed.
public struct LocalTimelines: Sendable {
    public let me: PeerID
    let clocks: PeerClocks

    public init(me: PeerID, clocks: PeerClocks) {
        self.me = me
        self.clocks = clocks
    }

    /// The anchor time of `record` on the local clock, with its error bound; nil while no
    /// estimate of its clock (or of its alternate's) exists. Until then the record cannot be
    /// followed: players wait.
    public func anchor(of record: ItemRecord, now: LocalTime) -> (time: LocalTime, bound: TimeSpan)? {
        guard let a = converted(record, now: now, through: { clocks.resolved($0, at: now)?.estimate }) else { return nil }
        guard let e = a.estimate else { return (a.time, .zero) }
        // The bound is the estimate's at the converted instant (it grows away from the samples),
        // and through the alternate, that anchor's own besides.
        return (a.time, e.errorBoundSpan(at: a.time) + (a.direct ? .zero : record.alternate?.bound ?? .zero))
    }

    /// ``anchor(of:now:)``'s time alone, converted as it is (``PeerClocks/conversion(of:at:)``).
    public func anchorTime(of record: ItemRecord, now: LocalTime) -> LocalTime? {
        converted(record, now: now)?.time
    }

    /// ``converted(_:now:through:)`` through the estimates for converting (their bound unread).
    private func converted(_ record: ItemRecord, now: LocalTime) -> (time: LocalTime, estimate: ClockEstimate?, direct: Bool)? {
        converted(record, now: now, through: { clocks.conversion(of: $0, at: now) })
    }

    /// The anchor on the local clock, with the estimate it went through (nil on the local clock)
    /// and whether that was the record's own clock's: one resolution for both. `estimate` gives a
    /// peer's clock.
    private func converted(
        _ record: ItemRecord, now: LocalTime, through estimate: (PeerID) -> ClockEstimate?
    ) -> (time: LocalTime, estimate: ClockEstimate?, direct: Bool)? {
        if record.clock == me { return (LocalTime(ours: record.timeline.anchorTime), nil, true) }
        if let e = estimate(record.clock) { return (e.localTime(at: record.timeline.anchorTime), e, true) }
        if let alt = record.alternate {
            if alt.via == me { return (LocalTime(ours: alt.anchorTime), nil, false) }
            if let e = estimate(alt.via) { return (e.localTime(at: alt.anchorTime), e, false) }
        }
        return nil
    }

    /// The record's timeline on the local clock, or nil (see ``anchor(of:now:)``).
    ///
    /// A playing timeline that started in the past is re-anchored at `now` (converting `now` to
    /// the record's clock, where the estimate is freshest, rather than an anchor seconds old), and
    /// its rate is scaled by that clock's rate relative to ours, so that every peer advances at
    /// the same pace.
    public func timeline(of record: ItemRecord, now: LocalTime) -> Timeline<LocalTime>? {
        let t = record.timeline
        if record.clock == me { return t.moved(to: LocalTime(ours: t.anchorTime)) }
        guard let anchor = converted(record, now: now) else { return nil }
        let local = t.moved(to: anchor.time)
        guard t.phase == .playing, let estimate = anchor.estimate else { return local }
        let scaled = t.rate * (1 + estimate.skewPPM * 1e-6)
        if anchor.time >= now || !anchor.direct {
            return Timeline(phase: .playing, anchorTime: anchor.time, position: t.position, rate: scaled)
        }
        let clockNow = estimate.peerTime(at: now)
        return Timeline(phase: .playing, anchorTime: now, position: t.position(at: clockNow), rate: scaled)
    }
}
