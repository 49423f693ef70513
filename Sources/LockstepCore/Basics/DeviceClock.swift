/// A simulated device clock: the agent's own clock as its peers see it.
///
/// In the lab every namespace reads the same `CLOCK_MONOTONIC`, so true offsets are zero. To test
/// clock estimation against a known truth, an agent can pretend its clock runs at
/// `offset + (1 + skew) × host`: every time value it puts on the wire (and every one it reads back)
/// is on this scale, while players keep talking in the machine's real host time.
///
///     device(h) = h + offsetNs + skewPPM × 1e-6 × (h − epochNs)
///
/// The default (zero offset, zero skew) is the identity, which is what production uses.
public struct DeviceClock: Sendable, Equatable {
    /// Offset of the device clock from host time at `epochNs`, in nanoseconds.
    public var offsetNs: Int64
    /// Rate error of the device clock, in parts per million (positive runs fast).
    public var skewPPM: Double
    /// The host time at which the offset is exactly `offsetNs`.
    public var epochNs: Int64

    public init(offsetNs: Int64 = 0, skewPPM: Double = 0, epochNs: Int64 = 0) {
        self.offsetNs = offsetNs
        self.skewPPM = skewPPM
        self.epochNs = epochNs
    }

    /// The identity: device time is host time.
    public static let identity = DeviceClock()

    public var isIdentity: Bool { offsetNs == 0 && skewPPM == 0 }

    /// Device time at host time `host`.
    @inline(__always)
    public func device(fromHost host: Int64) -> Int64 {
        if skewPPM == 0 { return host &+ offsetNs }
        let drift = Double(host &- epochNs) * skewPPM * 1e-6
        return host &+ offsetNs &+ Int64(drift.rounded())
    }

    /// Host time at device time `device`: the inverse of ``device(fromHost:)`` (to the nanosecond).
    @inline(__always)
    public func host(fromDevice device: Int64) -> Int64 {
        if skewPPM == 0 { return device &- offsetNs }
        // device − offset − epoch = (h − epoch)(1 + s)
        let k = 1 + skewPPM * 1e-6
        let since = Double(device &- offsetNs &- epochNs) / k
        return epochNs &+ Int64(since.rounded())
    }
}
