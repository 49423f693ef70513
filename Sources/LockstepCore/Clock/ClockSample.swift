/// One NTP-style exchange with a peer: four timestamps, and the offset and delay they imply.
///
///     local   t1 ──request──▶            ◀──reply── t4
///     peer              t2 (receive)  t3 (reply)
///
/// `t1` and `t4` are on the local agent's clock (``LocalTime``), `t2` and `t3` on the peer's
/// (``PeerTime``); receive timestamps (`t2`, `t4`) come from the kernel (`SO_TIMESTAMPNS`). As in RFC 5905 §8:
///
///     offset θ = ((t2 − t1) + (t3 − t4)) / 2     (peer minus local)
///     delay  δ = (t4 − t1) − (t3 − t2)           (round trip, without the peer's turnaround)
///
/// θ is exact when both legs take the same time; in general the true offset lies within
/// `θ ± δ/2` (each leg takes between zero and δ), which is what the hard error bound rests on.
/// The differences are taken in integers, so absolute values anywhere in `Int64` are fine;
/// only the differences must be sane (``isValid``).
public struct ClockSample: Sendable, Equatable, Hashable {
    /// Local send time.
    public var t1: LocalTime
    /// Peer receive time (the peer's clock).
    public var t2: PeerTime
    /// Peer reply time (the peer's clock).
    public var t3: PeerTime
    /// Local receive time.
    public var t4: LocalTime

    public init(t1: LocalTime, t2: PeerTime, t3: PeerTime, t4: LocalTime) {
        self.t1 = t1
        self.t2 = t2
        self.t3 = t3
        self.t4 = t4
    }

    /// Peer minus local, in nanoseconds, as measured by this exchange (meaningful only if ``isValid``).
    @inline(__always)
    public var offset: Double {
        (Double(t2.ns &- t1.ns) + Double(t3.ns &- t4.ns)) / 2
    }

    /// Round-trip time without the peer's turnaround, in nanoseconds (meaningful only if ``isValid``).
    @inline(__always)
    public var delay: Int64 {
        (t4.ns &- t1.ns) &- (t3.ns &- t2.ns)
    }

    /// The local time the offset refers to: halfway between sending and receiving.
    @inline(__always)
    public var midpointLocal: LocalTime {
        LocalTime(ns: t1.ns &+ (t4.ns &- t1.ns) / 2)
    }

    /// The largest offset or round trip the estimator entertains: about 73 years. Beyond it the
    /// timestamps are garbage (or their differences would overflow).
    public static let maxMagnitudeNs: Int64 = 1 << 61

    /// True when the timestamps can come from a real exchange: no overflow, time moves forward
    /// on both sides, and the delay is not negative.
    public var isValid: Bool {
        let (roundTrip, o1) = t4.ns.subtractingReportingOverflow(t1.ns)
        let (turnaround, o2) = t3.ns.subtractingReportingOverflow(t2.ns)
        let (out, o3) = t2.ns.subtractingReportingOverflow(t1.ns)
        let (back, o4) = t3.ns.subtractingReportingOverflow(t4.ns)
        if o1 || o2 || o3 || o4 { return false }
        guard roundTrip >= 0, turnaround >= 0, roundTrip >= turnaround else { return false }
        let limit = ClockSample.maxMagnitudeNs
        return roundTrip < limit && out.magnitude < limit.magnitude && back.magnitude < limit.magnitude
    }
}
