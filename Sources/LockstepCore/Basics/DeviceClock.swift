/// A simulated device clock: the agent's own clock (its ``LocalTime``) as a line over a reference
/// timescale: the host's `CLOCK_MONOTONIC` in the agent, the true time in simulations.
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

    /// Device time at host time `host` (ns on the reference timescale).
    @inline(__always)
    public func device(fromHost host: Int64) -> LocalTime {
        if skewPPM == 0 { return LocalTime(ns: host.addingSaturating(offsetNs)) }
        let drift = Double(host.subtractingSaturating(epochNs)) * skewPPM * 1e-6
        return LocalTime(ns: host.addingSaturating(offsetNs).addingSaturating(Int64(saturating: drift.rounded())))
    }

    /// Host time at device time `device`: the inverse of ``device(fromHost:)`` (to the nanosecond).
    @inline(__always)
    public func host(fromDevice device: LocalTime) -> Int64 {
        if skewPPM == 0 { return device.ns.subtractingSaturating(offsetNs) }
        // device − offset − epoch = (h − epoch)(1 + s)
        let k = 1 + skewPPM * 1e-6
        let since = Double(device.ns.subtractingSaturating(offsetNs).subtractingSaturating(epochNs)) / k
        return epochNs.addingSaturating(Int64(saturating: since.rounded()))
    }
}
