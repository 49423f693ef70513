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
    /// Each peer's latest outlier: its residual (peer minus local, sample minus estimate), the
    /// sample's round trip (the residual is known to within half of it) and when.
    private var evidence: [PeerID: (residualNs: Double, delayNs: Int64, at: LocalTime)] = [:]

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    /// A sample from `peer` with round trip `delay` fell outside its estimate by `residualNs`
    /// (sample minus estimate, in peer-minus-local offset). `measured` is how many peers have an
    /// estimate. Returns this clock's step (positive: it jumped ahead) once more than half of
    /// them, and at least two, show one residual: the residual of the fastest of those samples
    /// (a sample's offset is known to within half its round trip; a slow one would leave the
    /// clock that much off, and every link would then see that as a step of its peer).
    public mutating func onOutlier(from peer: PeerID, residualNs: Double, delay: TimeSpan = .zero, at now: LocalTime, measured: Int) -> TimeSpan? {
        guard residualNs.isFinite, residualNs.magnitude >= Double(configuration.minStep.ns) else {
            evidence[peer] = nil
            return nil
        }
        evidence[peer] = (residualNs, max(delay.ns, 0), now)
        evidence = evidence.filter { now - $0.value.at <= configuration.window }
        let tolerance = Double(configuration.tolerance.ns)
        let samples = Array(evidence.values)
        var best: [(residualNs: Double, delayNs: Int64, at: LocalTime)] = []
        for r in samples {
            let cluster = samples.filter { ($0.residualNs > 0) == (r.residualNs > 0) && ($0.residualNs - r.residualNs).magnitude <= tolerance }
            if cluster.count > best.count { best = cluster }
        }
        guard best.count >= 2, best.count * 2 > measured,
            let fastest = best.min(by: { ($0.delayNs, $0.residualNs) < ($1.delayNs, $1.residualNs) })
        else { return nil }
        evidence.removeAll()
        // Every peer seems to have moved by −Δ: this clock moved by Δ.
        return TimeSpan(nanoseconds: -fastest.residualNs)
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
