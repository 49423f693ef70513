import LockstepCore

/// Measures one host's view of one peer over a run: errors against the truth, bound coverage,
/// and when the error dropped (for good) below 1 ms and 100 µs.
public struct PairRun: Sendable {
    public var stats = ErrorStats()
    /// True time of the last observation with an error ≥ 1 ms / ≥ 100 µs (or with no estimate):
    /// the estimate is usable at that level from then on.
    public var lastAbove1ms: Int64 = 0
    public var lastAbove100us: Int64 = 0
    public var firstEstimate: Int64?

    public init() {}

    /// Observes a's estimate of b; counts it in the statistics only from `measureFrom` on.
    /// `truthBiasNs` falsifies the truth, to show that the checks can fail.
    public mutating func observe(_ net: ClockNetwork, _ a: Int, _ b: Int, measureFrom: Int64, truthBiasNs: Double = 0) {
        let t = net.local(a, at: net.now)
        guard let e = net.estimate(a, of: b) else {
            lastAbove1ms = net.now
            lastAbove100us = net.now
            return
        }
        if firstEstimate == nil { firstEstimate = net.now }
        let error = e.offset(at: t) - net.trueOffset(of: b, relativeTo: a, at: net.now) - truthBiasNs
        if error.magnitude >= 1_000_000 { lastAbove1ms = net.now }
        if error.magnitude >= 100_000 { lastAbove100us = net.now }
        if net.now >= measureFrom {
            stats.add(error: error, bound: e.errorBound(at: t), hardBound: e.hardBound(at: t))
        }
    }

    /// One line of figures; times to usable are since `appearedAt`, to the 10 ms of observation.
    public func report(_ name: String, appearedAt: Int64 = 0) -> String {
        func since(_ t: Int64) -> String { "\(ErrorStats.format(Double(max(0, t - appearedAt)) / 1e6)) ms" }
        return "[\(name)] \(stats) usable<1ms after \(since(lastAbove1ms)), <100µs after \(since(lastAbove100us))"
    }
}
