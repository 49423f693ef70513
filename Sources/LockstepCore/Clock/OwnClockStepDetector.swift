/// Notices that this device's own clock stepped, from what its peers' clocks seem to do.
///
/// When this clock jumps by `Δ` (a clock set without this agent being told, a device resumed
/// from suspend while `CLOCK_MONOTONIC` stood still), every peer's clock seems to jump by `−Δ` at
/// once: each link's samples fall outside its estimate by about the same residual. Peers do not
/// step together, so when most measured peers agree on one residual, the step was this clock's.
/// The owner then steps its device clock back by `Δ`: the clock the group sees stays continuous,
/// so the group's time scale does not move even when this device is the group's basis
/// (``GroupClock``), and the peers' estimators, which need several agreeing outliers of their own
/// before they believe a step (``ClockEstimator/Configuration/stepConfirmations``), never adopt it.
///
/// With fewer than two measured peers nothing can tell whose clock stepped: the link's estimator
/// confirms the step as the peer's, as it would without this detector.
public struct OwnClockStepDetector: Sendable {
    public struct Configuration: Sendable {
        /// Smaller residuals are the estimators' business (they are within a few bounds of noise).
        public var minStep: TimeSpan = .milliseconds(2)
        /// Residuals of one step, seen through different peers, agree within this (path noise,
        /// and the skew between the samples).
        public var tolerance: TimeSpan = .milliseconds(1)
        /// Evidence older than this no longer counts.
        public var window: TimeSpan = .seconds(3)

        public init() {}
    }

    public let configuration: Configuration
    /// Each peer's latest outlier: its residual (peer minus local, sample minus estimate) and when.
    private var evidence: [PeerID: (residualNs: Double, at: LocalTime)] = [:]

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    /// A sample from `peer` fell outside its estimate by `residualNs` (sample minus estimate, in
    /// peer-minus-local offset). `measured` is how many peers have an estimate. Returns this
    /// clock's step (positive: it jumped ahead) once more than half of them, and at least two,
    /// show one residual.
    public mutating func onOutlier(from peer: PeerID, residualNs: Double, at now: LocalTime, measured: Int) -> TimeSpan? {
        guard residualNs.isFinite, residualNs.magnitude >= Double(configuration.minStep.ns) else {
            evidence[peer] = nil
            return nil
        }
        evidence[peer] = (residualNs, now)
        evidence = evidence.filter { now - $0.value.at <= configuration.window }
        let tolerance = Double(configuration.tolerance.ns)
        let residuals = evidence.values.map(\.residualNs)
        var best: [Double] = []
        for r in residuals {
            let cluster = residuals.filter { ($0 > 0) == (r > 0) && ($0 - r).magnitude <= tolerance }
            if cluster.count > best.count { best = cluster }
        }
        guard best.count >= 2, best.count * 2 > measured else { return nil }
        evidence.removeAll()
        let sorted = best.sorted()
        // Every peer seems to have moved by −Δ: this clock moved by Δ.
        return TimeSpan(nanoseconds: -sorted[sorted.count / 2])
    }

    /// A sample from `peer` agreed with its estimate: its earlier outlier was not a step of ours.
    public mutating func onConsistent(from peer: PeerID) {
        evidence[peer] = nil
    }

    /// The step was dealt with (or the local clock restarted): evidence so far is void.
    public mutating func reset() {
        evidence.removeAll()
    }
}
