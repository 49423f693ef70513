/// One NTP-style exchange with a peer: four timestamps, and the offset and delay they imply.
///
///     local   t1 ──request──▶            ◀──reply── t4
///     peer              t2 (receive)  t3 (reply)
///
/// `t1` and `t4` are on the local agent's clock, `t2` and `t3` on the peer's; receive timestamps
/// (`t2`, `t4`) come from the kernel (`SO_TIMESTAMPNS`). All are nanoseconds. As in RFC 5905 §8:
///
///     offset θ = ((t2 − t1) + (t3 − t4)) / 2     (peer minus local)
///     delay  δ = (t4 − t1) − (t3 − t2)           (round trip, without the peer's turnaround)
///
/// θ is exact when both legs take the same time; in general the true offset lies within
/// `θ ± δ/2` (each leg takes between zero and δ), which is what the hard error bound rests on.
/// The differences are taken in integers, so absolute values anywhere in `Int64` are fine;
/// only the differences must be sane (``isValid``).
public struct ClockSample: Sendable, Equatable, Hashable {
    /// Local send time (local clock).
    public var t1: Int64
    /// Peer receive time (peer clock).
    public var t2: Int64
    /// Peer reply time (peer clock).
    public var t3: Int64
    /// Local receive time (local clock).
    public var t4: Int64

    public init(t1: Int64, t2: Int64, t3: Int64, t4: Int64) {
        self.t1 = t1
        self.t2 = t2
        self.t3 = t3
        self.t4 = t4
    }

    /// Peer minus local, in nanoseconds, as measured by this exchange (NaN-free only if ``isValid``).
    @inline(__always)
    public var offset: Double {
        (Double(t2 &- t1) + Double(t3 &- t4)) / 2
    }

    /// Round-trip time without the peer's turnaround, in nanoseconds.
    @inline(__always)
    public var delay: Int64 {
        (t4 &- t1) &- (t3 &- t2)
    }

    /// The local time the offset refers to: halfway between sending and receiving.
    @inline(__always)
    public var midpointLocal: Int64 {
        t1 &+ (t4 &- t1) / 2
    }

    /// The largest offset or round trip the estimator entertains: about 73 years. Beyond it the
    /// timestamps are garbage (or their differences would overflow).
    public static let maxMagnitudeNs: Int64 = 1 << 61

    /// True when the timestamps can come from a real exchange: no overflow, time moves forward
    /// on both sides, and the delay is not negative.
    public var isValid: Bool {
        let (roundTrip, o1) = t4.subtractingReportingOverflow(t1)
        let (turnaround, o2) = t3.subtractingReportingOverflow(t2)
        let (out, o3) = t2.subtractingReportingOverflow(t1)
        let (back, o4) = t3.subtractingReportingOverflow(t4)
        if o1 || o2 || o3 || o4 { return false }
        guard roundTrip >= 0, turnaround >= 0, roundTrip >= turnaround else { return false }
        let limit = ClockSample.maxMagnitudeNs
        return roundTrip < limit && out.magnitude < limit.magnitude && back.magnitude < limit.magnitude
    }
}
