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
/// ``ClockEstimator/Configuration/maxConsecutiveDelayRejections`` in a row, and stays open until
/// a sample passes it on its own again.
/// A sample slower than ``ClockEstimator/Configuration/maxDelay`` is never kept.
///
/// **Delay steps.** A path that got slower may be a route change or an on-path attacker holding
/// one direction's packets (review finding M6): either way the two-way method cannot tell how
/// the offset moved. ``ClockEstimator/Configuration/delayStepSamples`` samples in a row slower
/// than the window's minimum by more than ``ClockEstimator/Configuration/delayStepFactor`` times
/// the mean excess (a lower bar than the gate's, so that rises the gate lets in on a jittery link
/// count too; samples the gate rejected count as well) are a *delay step*: the
/// gate records it in ``delayStep`` (see ``DelayStep``) rather than taking it as the path's new
/// normal, and the window restarts from the newer half of the run (``Decision/restart``); it
/// restarts again when the path is back.
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
        /// The path's delay stepped, or came back: restart the window from ``slowRun`` (which ends
        /// with this sample: the newer half of a run of slow ones, or the one back on the old path).
        case restart
    }

    let configuration: ClockEstimator.Configuration
    /// Outliers waiting for confirmation of a step, oldest first.
    private(set) var held: ContiguousArray<ClockSample>
    private var consecutiveDelayRejections = 0
    /// The path's delay step, while it is not over (see ``DelayStep``).
    private(set) var delayStep: DelayStep?
    /// The last samples in a row slower than the delay step's threshold (kept or not), oldest
    /// first; after ``Decision/restart``, the samples to restart from.
    private(set) var slowRun: ContiguousArray<ClockSample>

    init(configuration: ClockEstimator.Configuration) {
        self.configuration = configuration
        self.held = []
        self.held.reserveCapacity(configuration.stepConfirmations)
        self.slowRun = []
        self.slowRun.reserveCapacity(configuration.delayStepSamples)
    }

    /// Forgets everything: held outliers, runs of slow samples, the delay step.
    mutating func reset() {
        windowRestarted()
        delayStep = nil
    }

    /// The window restarted (a clock step, a delay step): held outliers and runs are forgotten,
    /// but not a delay step.
    mutating func windowRestarted() {
        held.removeAll(keepingCapacity: true)
        slowRun.removeAll(keepingCapacity: true)
        consecutiveDelayRejections = 0
    }

    /// Compares a fit after a delay step with the fit before it (``DelayStep/measure(_:configuration:)``).
    mutating func measureDelayStep(_ fit: EnvelopeFit.Fit) {
        delayStep?.measure(fit, configuration: configuration)
    }

    /// Judges `sample` against `fit` (the estimate so far, nil before the first sample) and the
    /// `window` it was fitted to. Only validity and the delay cap are checked until the window
    /// holds two samples. An outlier that may not `confirmStep` is rejected without being held.
    mutating func judge(_ sample: ClockSample, against fit: EnvelopeFit.Fit?, window: SampleWindow, confirmStep: Bool = true) -> Decision {
        guard sample.isValid else { return .reject(.rejectedInvalid) }
        if sample.delay > configuration.maxDelay.ns {
            return .reject(.rejectedDelay(excessNs: sample.delay &- (fit?.minDelay ?? 0)))
        }
        if let fit, window.count >= 2 {
            // A sample that cannot be reconciled with the line, whatever the path asymmetry.
            let local = sample.midpointLocal.ns
            let residual = sample.offset - fit.offset(atLocal: local)
            let wander = configuration.wanderPPM * 1e-6
            let allowed = Double(sample.delay) / 2 + fit.hardBound(atLocal: local, wander: wander) + configuration.stepThresholdNs
            if residual.magnitude > allowed {
                guard confirmStep else { return .reject(.rejectedOutlier(residualNs: residual)) }
                return onOutlier(sample, residual: residual, slope: fit.slope)
            }
            let excess = sample.delay &- fit.minDelay
            let meanExcess = window.meanExcess(over: fit.minDelay)
            if isDelayStep(sample, excess: excess, limit: threshold(configuration.delayStepFactor, meanExcess), fit: fit) {
                return .restart
            }
            // A sample slowed down far more than the others. After several in a row the path has
            // changed: the gate stays open until a sample passes it on its own again.
            if excess > threshold(configuration.delayGateFactor, meanExcess) {
                consecutiveDelayRejections += 1
                if consecutiveDelayRejections < configuration.maxConsecutiveDelayRejections {
                    return .reject(.rejectedDelay(excessNs: excess))
                }
            } else {
                consecutiveDelayRejections = 0
            }
        }
        held.removeAll(keepingCapacity: true)
        if delayStep?.kept(delay: sample.delay) == false {
            // The path is back: the slower path's samples go as the faster one's did.
            delayStep = nil
            slowRun.removeAll(keepingCapacity: true)
            slowRun.append(sample)
            return .restart
        }
        return .keep
    }

    /// The delay excess above which a sample is not kept: ``ClockEstimator/Configuration/delayGateFactor``
    /// times the window's mean excess over `minDelay`, and at least
    /// ``ClockEstimator/Configuration/minDelayGate``.
    func delayGate(minDelay: Int64, window: SampleWindow) -> Int64 {
        threshold(configuration.delayGateFactor, window.meanExcess(over: minDelay))
    }

    private func threshold(_ factor: Double, _ meanExcess: Double) -> Int64 {
        max(configuration.minDelayGate.ns, Int64(factor * meanExcess))
    }

    /// Counts runs of samples more than `limit` slower than the window's minimum; true when the
    /// run is long enough to be a delay step, which is then recorded (or added to).
    private mutating func isDelayStep(_ sample: ClockSample, excess: Int64, limit: Int64, fit: EnvelopeFit.Fit) -> Bool {
        guard excess > limit else {
            slowRun.removeAll(keepingCapacity: true)
            return false
        }
        slowRun.append(sample)
        guard slowRun.count >= configuration.delayStepSamples else { return false }
        // The window restarts from the newer half of the run: its first samples may be the old
        // path's slowest, which cleared the bar by chance, and one of them would pin an envelope
        // (and the new minimum) to the old path.
        slowRun.removeFirst(slowRun.count / 2)
        var fastest = Int64.max
        for s in slowRun { fastest = min(fastest, s.delay) }
        if delayStep == nil {
            delayStep = DelayStep(after: fastest, threshold: limit, anchor: fit)
        } else {
            delayStep?.rose(to: fastest)
        }
        return true
    }

    private mutating func onOutlier(_ sample: ClockSample, residual: Double, slope: Double) -> Decision {
        if held.count == configuration.stepConfirmations { held.removeFirst() }
        held.append(sample)
        guard held.count == configuration.stepConfirmations else { return .reject(.rejectedOutlier(residualNs: residual)) }
        // Do the held samples agree with each other (allowing for the skew between them)?
        let first = held[0]
        for s in held.dropFirst() {
            let drift = slope * Double(s.midpointLocal.ns &- first.midpointLocal.ns)
            let gap = (s.offset - first.offset - drift).magnitude
            if gap > Double(s.delay &+ first.delay) / 2 + configuration.stepThresholdNs {
                return .reject(.rejectedOutlier(residualNs: residual))
            }
        }
        return .step(byNs: residual)
    }
}
