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
/// The value is plain data and `Codable`, so that peers can gossip their estimates: an estimate
/// made by another agent is on that agent's clock (its "local" is the reporter).
public struct ClockEstimate: Sendable, Equatable, Codable {
    /// Local time at which ``offsetNs``, ``errorBoundNs`` and ``hardBoundNs`` hold.
    public var referenceLocal: Int64
    /// Peer minus local at ``referenceLocal``, in nanoseconds.
    public var offsetNs: Double
    /// Rate of the peer's clock relative to the local one: `d(offset)/d(local) × 1e6`.
    public var skewPPM: Double
    /// Statistical error bound (symmetric paths assumed) at ``referenceLocal``, in nanoseconds.
    public var errorBoundNs: Double
    /// How fast ``errorBoundNs`` grows away from the reference: the skew's uncertainty plus an
    /// assumed clock wander, in parts per million (1 ppm = 1 ns of bound per ms).
    public var errorGrowthPPM: Double
    /// Error bound that holds for any path asymmetry, at ``referenceLocal``, in nanoseconds.
    public var hardBoundNs: Double
    /// How fast ``hardBoundNs`` grows away from the reference, in parts per million.
    public var hardGrowthPPM: Double
    /// The minimum round-trip delay among the samples used, in nanoseconds.
    public var delayNs: Int64
    /// How many samples the estimate rests on.
    public var sampleCount: Int
    /// Local time of the newest sample used.
    public var lastSampleLocal: Int64
    /// Alarm: by how much the path's minimum round trip rose in a sudden step that is not
    /// explained, in nanoseconds (0: none). Such a rise may have moved the offset by up to half of
    /// it (one direction slowed, e.g. by an on-path attacker) and ``errorBoundNs`` is widened to
    /// cover that. Not part of the encoded form: it describes this agent's own link.
    public var delayStepNs: Int64 = 0

    public init(
        referenceLocal: Int64,
        offsetNs: Double,
        skewPPM: Double = 0,
        errorBoundNs: Double,
        errorGrowthPPM: Double = 0,
        hardBoundNs: Double,
        hardGrowthPPM: Double = 0,
        delayNs: Int64,
        sampleCount: Int = 1,
        lastSampleLocal: Int64? = nil,
        delayStepNs: Int64 = 0
    ) {
        self.referenceLocal = referenceLocal
        self.offsetNs = offsetNs
        self.skewPPM = skewPPM
        self.errorBoundNs = errorBoundNs
        self.errorGrowthPPM = errorGrowthPPM
        self.hardBoundNs = hardBoundNs
        self.hardGrowthPPM = hardGrowthPPM
        self.delayNs = delayNs
        self.sampleCount = sampleCount
        self.lastSampleLocal = lastSampleLocal ?? referenceLocal
        self.delayStepNs = delayStepNs
    }

    /// The encoded form is the gossiped one (`clock_report`), which carries no alarm.
    enum CodingKeys: String, CodingKey {
        case referenceLocal, offsetNs, skewPPM, errorBoundNs, errorGrowthPPM, hardBoundNs, hardGrowthPPM, delayNs, sampleCount
        case lastSampleLocal
    }

    // MARK: - Evaluating

    /// Peer minus local at local time `t`, in nanoseconds.
    @inline(__always)
    public func offset(atLocal t: Int64) -> Double {
        offsetNs + skewPPM * 1e-6 * Double(t &- referenceLocal)
    }

    /// The statistical error bound at local time `t`, in nanoseconds.
    @inline(__always)
    public func errorBound(atLocal t: Int64) -> Double {
        errorBoundNs + errorGrowthPPM * 1e-6 * Double(t &- referenceLocal).magnitude
    }

    /// The hard (any-asymmetry) error bound at local time `t`, in nanoseconds.
    @inline(__always)
    public func hardBound(atLocal t: Int64) -> Double {
        hardBoundNs + hardGrowthPPM * 1e-6 * Double(t &- referenceLocal).magnitude
    }

    /// The peer's clock reading at local time `t`.
    @inline(__always)
    public func peerTime(fromLocal t: Int64) -> Int64 {
        t &+ Int64(offset(atLocal: t).rounded())
    }

    /// The local time at which the peer's clock reads `p`: the inverse of ``peerTime(fromLocal:)``
    /// (a round trip through both lands within 1 ns of where it started).
    @inline(__always)
    public func localTime(fromPeer p: Int64) -> Int64 {
        // p = t + offsetNs + s (t − ref)  ⇒  t − ref = (p − ref − offsetNs) / (1 + s)
        let rate = 1 + skewPPM * 1e-6
        let since = (Double(p &- referenceLocal) - offsetNs) / rate
        return referenceLocal &+ Int64(since.rounded())
    }

    /// The same estimate moved to another reference time: the offset extrapolated along the skew,
    /// the bounds widened by their growth. Nothing is lost by moving it.
    public func rebased(toLocal t: Int64) -> ClockEstimate {
        var e = self
        e.offsetNs = offset(atLocal: t)
        e.errorBoundNs = errorBound(atLocal: t)
        e.hardBoundNs = hardBound(atLocal: t)
        e.referenceLocal = t
        return e
    }

    // MARK: - Composing (for the mesh)

    /// The estimate seen from the other side: local minus peer, as a function of peer time.
    ///
    /// The reference moves to the peer's reading of ``referenceLocal``; the rate inverts
    /// (`1 + s' = 1 / (1 + s)`); bounds keep their size (their growth is rescaled to peer time).
    public func inverted() -> ClockEstimate {
        let rate = 1 + skewPPM * 1e-6
        return ClockEstimate(
            referenceLocal: peerTime(fromLocal: referenceLocal),
            offsetNs: -offsetNs,
            skewPPM: (1 / rate - 1) * 1e6,
            errorBoundNs: errorBoundNs,
            errorGrowthPPM: errorGrowthPPM / rate,
            hardBoundNs: hardBoundNs,
            hardGrowthPPM: hardGrowthPPM / rate,
            delayNs: delayNs,
            sampleCount: sampleCount,
            lastSampleLocal: peerTime(fromLocal: lastSampleLocal),
            delayStepNs: delayStepNs
        )
    }

    /// Chains two estimates: `self` is B relative to A (on A's clock), `next` is C relative to B
    /// (on B's clock, e.g. a report received from B). The result is C relative to A on A's clock,
    /// referenced at A's local time `t`:
    ///
    ///     offset_AC(t) = offset_AB(t) + offset_BC(t + offset_AB(t))
    ///     1 + s_AC     = (1 + s_AB)(1 + s_BC)
    ///
    /// Bounds add (both hard and statistical: the worst case of two independent errors), each
    /// evaluated at its own clock's reading of `t`, so a stale report carries its widening in;
    /// so do delay step alarms (either hop's rise may bias the path).
    public func composed(with next: ClockEstimate, atLocal t: Int64) -> ClockEstimate {
        let ab = offset(atLocal: t)
        let tB = t &+ Int64(ab.rounded())
        let bc = next.offset(atLocal: tB)
        let rateAB = 1 + skewPPM * 1e-6
        let rateBC = 1 + next.skewPPM * 1e-6
        let lastB = next.lastSampleLocal
        let lastBOnA = localTime(fromPeer: lastB)
        return ClockEstimate(
            referenceLocal: t,
            offsetNs: ab + bc,
            skewPPM: (rateAB * rateBC - 1) * 1e6,
            errorBoundNs: errorBound(atLocal: t) + next.errorBound(atLocal: tB),
            errorGrowthPPM: errorGrowthPPM + next.errorGrowthPPM * rateAB,
            hardBoundNs: hardBound(atLocal: t) + next.hardBound(atLocal: tB),
            hardGrowthPPM: hardGrowthPPM + next.hardGrowthPPM * rateAB,
            delayNs: delayNs &+ next.delayNs,
            sampleCount: min(sampleCount, next.sampleCount),
            lastSampleLocal: min(lastSampleLocal, lastBOnA),
            delayStepNs: delayStepNs &+ next.delayStepNs
        )
    }
}
