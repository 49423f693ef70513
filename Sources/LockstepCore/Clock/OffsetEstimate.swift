/// What is known about a peer's clock relative to the local one: an offset at a reference time,
/// a rate (skew), and how wrong they may be.
///
/// Terms: *local* time is this agent's clock, *peer* time the other's; the offset is
/// `peer − local` and is a straight line in local time,
///
///     offset(t) = offsetNs + skewPPM × 1e-6 × (t − referenceLocal)
///
/// Two bounds are carried, both growing linearly with `|t − referenceLocal|`:
///
/// - ``errorBoundNs``: the *statistical* bound. It assumes the network path is symmetric on
///   average (both legs' minimum delays equal) and covers the true error with about 99 %
///   probability under that assumption. It is what synchronisation decisions use.
/// - ``hardBoundNs``: covers *any* asymmetry (each leg may take anything from zero to the whole
///   round trip): half the best sample's delay plus how far the estimate strays from that sample
///   plus drift. It is loose (about δ_min/2) but holds without assumptions except a sane clock.
///
/// A path asymmetry of `a` (outbound minus return) biases every two-way method by `a/2`; it can
/// only be seen by comparing paths (see ``MeshClock``), never by one link alone.
///
/// The value is plain data and `Codable`, so that peers can gossip their estimates. It is generic
/// over the clock its times are on (its *observer*): ``ClockEstimate`` is this node's estimate of
/// a peer, on the local clock; ``ReportedEstimate`` is a peer's estimate of another peer, as that
/// peer reported it, on the reporter's clock. Only a ``ClockEstimate`` converts times between
/// clocks; a report is composed with the estimate of its reporter first
/// (``OffsetEstimate/composed(with:at:)``).
public struct OffsetEstimate<Observer: ClockInstant>: Sendable, Equatable, Codable {
    /// Observer's time at which ``offsetNs``, ``errorBoundNs`` and ``hardBoundNs`` hold.
    public var reference: Observer
    /// Peer minus observer at ``reference``, in nanoseconds.
    public var offsetNs: Double
    /// Rate of the peer's clock relative to the observer's: `d(offset)/d(observer) × 1e6`.
    public var skewPPM: Double
    /// Statistical error bound (symmetric paths assumed) at ``reference``, in nanoseconds.
    public var errorBoundNs: Double
    /// How fast ``errorBoundNs`` grows away from the reference: the skew's uncertainty plus an
    /// assumed clock wander, in parts per million (1 ppm = 1 ns of bound per ms).
    public var errorGrowthPPM: Double
    /// Error bound that holds for any path asymmetry, at ``reference``, in nanoseconds.
    public var hardBoundNs: Double
    /// How fast ``hardBoundNs`` grows away from the reference, in parts per million.
    public var hardGrowthPPM: Double
    /// The minimum round-trip delay among the samples used.
    public var delay: TimeSpan
    /// How many samples the estimate rests on.
    public var sampleCount: Int
    /// Observer's time of the newest sample used.
    public var lastSample: Observer
    /// Alarm: by how much the path's minimum round trip rose in a sudden step that is not
    /// explained (zero: none). Such a rise may have moved the offset by up to half of it (one
    /// direction slowed, e.g. by an on-path attacker) and ``errorBoundNs`` is widened to cover
    /// that. Not part of the encoded form: it describes the observer's own link.
    public var delayStep: TimeSpan = .zero

    public init(
        reference: Observer,
        offsetNs: Double,
        skewPPM: Double = 0,
        errorBoundNs: Double,
        errorGrowthPPM: Double = 0,
        hardBoundNs: Double,
        hardGrowthPPM: Double = 0,
        delay: TimeSpan,
        sampleCount: Int = 1,
        lastSample: Observer? = nil,
        delayStep: TimeSpan = .zero
    ) {
        self.reference = reference
        self.offsetNs = offsetNs
        self.skewPPM = skewPPM
        self.errorBoundNs = errorBoundNs
        self.errorGrowthPPM = errorGrowthPPM
        self.hardBoundNs = hardBoundNs
        self.hardGrowthPPM = hardGrowthPPM
        self.delay = delay
        self.sampleCount = sampleCount
        self.lastSample = lastSample ?? reference
        self.delayStep = delayStep
    }

    /// The encoded form is the gossiped one (`clock_report`), which carries no alarm.
    // The JSON names of the first protocol version: times on the observer's own ("local") clock.
    enum CodingKeys: String, CodingKey {
        case reference = "referenceLocal"
        case lastSample = "lastSampleLocal"
        case delay = "delayNs"
        case offsetNs, skewPPM, errorBoundNs, errorGrowthPPM, hardBoundNs, hardGrowthPPM, sampleCount
    }

    // MARK: - Evaluating

    /// Peer minus observer at observer's time `t`, in nanoseconds.
    @inline(__always)
    public func offset(at t: Observer) -> Double {
        offsetNs + skewPPM * 1e-6 * Double(t.ns.subtractingSaturating(reference.ns))
    }

    /// The statistical error bound at observer's time `t`, in nanoseconds.
    @inline(__always)
    public func errorBound(at t: Observer) -> Double {
        errorBoundNs + errorGrowthPPM * 1e-6 * Double(t.ns.subtractingSaturating(reference.ns)).magnitude
    }

    /// The hard (any-asymmetry) error bound at observer's time `t`, in nanoseconds.
    @inline(__always)
    public func hardBound(at t: Observer) -> Double {
        hardBoundNs + hardGrowthPPM * 1e-6 * Double(t.ns.subtractingSaturating(reference.ns)).magnitude
    }

    /// The same estimate moved to another reference time: the offset extrapolated along the skew,
    /// the bounds widened by their growth. Nothing is lost by moving it.
    public func rebased(to t: Observer) -> Self {
        var e = self
        e.offsetNs = offset(at: t)
        e.errorBoundNs = errorBound(at: t)
        e.hardBoundNs = hardBound(at: t)
        e.reference = t
        return e
    }

    /// The peer's clock reading at observer's time `t` (saturating).
    @inline(__always)
    func peerReading(at t: Observer) -> Int64 {
        t.ns.addingSaturating(Int64(saturating: offset(at: t).rounded()))
    }
}

/// This node's estimate of a peer's clock, on the local clock: the one way times move between
/// a ``PeerTime`` and a ``LocalTime``.
public typealias ClockEstimate = OffsetEstimate<LocalTime>

/// A peer's own estimate of another peer's clock, as it reported it: its times are on the
/// reporter's clock (see ``ClockReport``).
public typealias ReportedEstimate = OffsetEstimate<PeerTime>

extension OffsetEstimate where Observer == LocalTime {
    /// The peer's clock reading at local time `t`.
    @inline(__always)
    public func peerTime(at t: LocalTime) -> PeerTime {
        PeerTime(ns: peerReading(at: t))
    }

    /// The local time at which the peer's clock reads `p`: the inverse of ``peerTime(at:)`` (a
    /// round trip through both lands within 1 ns of where it started; saturating).
    @inline(__always)
    public func localTime(at p: PeerTime) -> LocalTime {
        // p = t + offsetNs + s (t − ref)  ⇒  t − ref = (p − ref − offsetNs) / (1 + s)
        let rate = 1 + skewPPM * 1e-6
        let since = (Double(p.ns.subtractingSaturating(reference.ns)) - offsetNs) / rate
        return LocalTime(ns: reference.ns.addingSaturating(Int64(saturating: since.rounded())))
    }

    /// The statistical error bound at local time `t`, as a span (saturating).
    public func errorBoundSpan(at t: LocalTime) -> TimeSpan { TimeSpan(nanoseconds: errorBound(at: t)) }

    // MARK: - Composing (for the mesh)

    /// Chains two estimates: `self` is B relative to A (on A's clock), `next` is C relative to B
    /// (on B's clock, a report received from B). The result is C relative to A on A's clock,
    /// referenced at A's local time `t`:
    ///
    ///     offset_AC(t) = offset_AB(t) + offset_BC(t + offset_AB(t))
    ///     1 + s_AC     = (1 + s_AB)(1 + s_BC)
    ///
    /// Each bound is evaluated at its own clock's reading of `t`, so a stale report carries its
    /// widening in. The hard bounds add (the worst case). The statistical bounds combine as
    /// independent errors, the root of the sum of their squares: the two links' exchanges share
    /// no datagram, and B's own wander enters them with opposite signs (B − A reads high when
    /// C − B reads low) and cancels. A delay step's possible bias is not noise: with an alarm on
    /// either link the statistical bounds add too, and the alarms add up (a report carries
    /// none: it is the reporter's own link's). The bounds' growth rates add.
    public func composed(with next: ReportedEstimate, at t: LocalTime) -> ClockEstimate {
        let ab = offset(at: t)
        let tB = peerTime(at: t)
        let bc = next.offset(at: tB)
        let rateAB = 1 + skewPPM * 1e-6
        let rateBC = 1 + next.skewPPM * 1e-6
        let lastBOnA = localTime(at: next.lastSample)
        return ClockEstimate(
            reference: t,
            offsetNs: ab + bc,
            skewPPM: (rateAB * rateBC - 1) * 1e6,
            errorBoundNs: delayStep == .zero && next.delayStep == .zero
                ? [errorBound(at: t), next.errorBound(at: tB)].rootSumSquare
                : errorBound(at: t) + next.errorBound(at: tB),
            errorGrowthPPM: errorGrowthPPM + next.errorGrowthPPM * rateAB,
            hardBoundNs: hardBound(at: t) + next.hardBound(at: tB),
            hardGrowthPPM: hardGrowthPPM + next.hardGrowthPPM * rateAB,
            delay: delay + next.delay,
            sampleCount: min(sampleCount, next.sampleCount),
            lastSample: min(lastSample, lastBOnA),
            delayStep: delayStep + next.delayStep
        )
    }
}

extension OffsetEstimate where Observer == PeerTime {
    /// This node's own estimate as the peers it reports to see it: the same numbers, its times
    /// now "the reporter's clock" (this node's).
    public init(reporting estimate: ClockEstimate) {
        self.init(
            reference: PeerTime(ours: estimate.reference), offsetNs: estimate.offsetNs, skewPPM: estimate.skewPPM,
            errorBoundNs: estimate.errorBoundNs, errorGrowthPPM: estimate.errorGrowthPPM, hardBoundNs: estimate.hardBoundNs,
            hardGrowthPPM: estimate.hardGrowthPPM, delay: estimate.delay, sampleCount: estimate.sampleCount,
            lastSample: PeerTime(ours: estimate.lastSample))
    }
}
