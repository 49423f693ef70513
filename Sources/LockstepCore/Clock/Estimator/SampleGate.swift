/// Decides what becomes of each sample before it reaches the window: invalid timestamps, clock
/// steps and slow samples are told apart here.
///
/// **Outliers and steps.** A sample whose bracket `θ ± δ/2` misses the hard bound around the fit's
/// line by more than ``ClockEstimator/Configuration/stepThresholdNs`` cannot come from this clock:
/// it is held back (``ClockEstimator/SampleVerdict/rejectedOutlier(residualNs:)``). When
/// ``ClockEstimator/Configuration/stepConfirmations`` such samples come in a row and agree with
/// each other, the peer's clock stepped (``Decision/step(byNs:)``): the window should restart
/// from them (``held``). Steps smaller than the hard bound plus the threshold are not detected
/// as steps; the envelopes absorb them as the window turns over.
///
/// **The delay gate.** Samples delayed far beyond the window's mean excess over its minimum
/// delay (``ClockEstimator/Configuration/delayGateFactor``) are not kept
/// (``ClockEstimator/SampleVerdict/rejectedDelay(excessNs:)``): they could not be on an envelope
/// anyway, except one direction's. The gate opens after
/// ``ClockEstimator/Configuration/maxConsecutiveDelayRejections`` in a row (the path changed),
/// and stays open until a sample passes it on its own again.
///
/// A value type with no clock: the fit and the window it judges against are arguments.
struct SampleGate: Sendable {
    /// What to do with a sample.
    enum Decision: Sendable, Equatable {
        /// Put it in the window.
        case keep
        /// Leave it out, with this verdict.
        case reject(ClockEstimator.SampleVerdict)
        /// The peer's clock stepped by about `byNs`: restart the window from ``held``.
        case step(byNs: Double)
    }

    let configuration: ClockEstimator.Configuration
    /// Outliers waiting for confirmation of a step, oldest first.
    private(set) var held: ContiguousArray<ClockSample>
    private var consecutiveDelayRejections = 0

    init(configuration: ClockEstimator.Configuration) {
        self.configuration = configuration
        self.held = []
        self.held.reserveCapacity(configuration.stepConfirmations)
    }

    /// Forgets held outliers and the run of delay rejections.
    mutating func reset() {
        held.removeAll(keepingCapacity: true)
        consecutiveDelayRejections = 0
    }

    /// Judges `sample` against `fit` (the estimate so far, nil before the first sample) and the
    /// `window` it was fitted to. Only validity is checked until the window holds two samples.
    mutating func judge(_ sample: ClockSample, against fit: EnvelopeFit.Fit?, window: SampleWindow) -> Decision {
        guard sample.isValid else { return .reject(.rejectedInvalid) }
        if let fit, window.count >= 2 {
            // A sample that cannot be reconciled with the line, whatever the path asymmetry.
            let local = sample.midpointLocal
            let residual = sample.offset - fit.offset(atLocal: local)
            let wander = configuration.wanderPPM * 1e-6
            let allowed = Double(sample.delay) / 2 + fit.hardBound(atLocal: local, wander: wander) + configuration.stepThresholdNs
            if residual.magnitude > allowed {
                return onOutlier(sample, residual: residual, slope: fit.slope)
            }
            // A sample slowed down far more than the others. After several in a row the path has
            // changed: the gate stays open until a sample passes it on its own again.
            let excess = sample.delay &- fit.minDelay
            if excess > delayGate(minDelay: fit.minDelay, window: window) {
                consecutiveDelayRejections += 1
                if consecutiveDelayRejections < configuration.maxConsecutiveDelayRejections {
                    return .reject(.rejectedDelay(excessNs: excess))
                }
            } else {
                consecutiveDelayRejections = 0
            }
        }
        held.removeAll(keepingCapacity: true)
        return .keep
    }

    /// The delay excess above which a sample is not kept: ``ClockEstimator/Configuration/delayGateFactor``
    /// times the window's mean excess over `minDelay`, and at least
    /// ``ClockEstimator/Configuration/minDelayGateNs``.
    func delayGate(minDelay: Int64, window: SampleWindow) -> Int64 {
        max(configuration.minDelayGateNs, Int64(configuration.delayGateFactor * window.meanExcess(over: minDelay)))
    }

    private mutating func onOutlier(_ sample: ClockSample, residual: Double, slope: Double) -> Decision {
        if held.count == configuration.stepConfirmations { held.removeFirst() }
        held.append(sample)
        guard held.count == configuration.stepConfirmations else { return .reject(.rejectedOutlier(residualNs: residual)) }
        // Do the held samples agree with each other (allowing for the skew between them)?
        let first = held[0]
        for s in held.dropFirst() {
            let drift = slope * Double(s.midpointLocal &- first.midpointLocal)
            let gap = (s.offset - first.offset - drift).magnitude
            if gap > Double(s.delay &+ first.delay) / 2 + configuration.stepThresholdNs {
                return .reject(.rejectedOutlier(residualNs: residual))
            }
        }
        return .step(byNs: residual)
    }
}
