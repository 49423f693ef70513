/// Estimates one peer's clock (offset and skew) from a window of four-timestamp exchanges.
///
/// One instance per peer, a value type: feed it samples with ``onSample(_:)``, ask it with
/// ``estimate(at:)``. It does no I/O and reads no clock; every time is an argument.
///
/// It is chrony's pipeline in stages, each in a type of its own (`Clock/Estimator/`):
///
/// 1. `SampleGate` judges each sample: impossible timestamps, outliers that cannot come from
///    this clock (and, confirmed, a clock step), samples delayed far beyond the others.
/// 2. `SampleWindow` keeps the last ``Configuration/capacity`` samples, none older than
///    ``Configuration/maxSampleAge``.
/// 3. `EnvelopeFit` fits a line *under* each direction's points (minimum delay per direction,
///    as NTP's clock filter and chrony's `sourcestats.c` trust the least-delayed samples) with a
///    shared skew, and the scales of its errors: the offset's `σ₀` where the envelopes rest, the
///    skew's `σₛ`, and a hard bound that holds for any path asymmetry.
///
/// **Bounds.** *Statistical* (equal minimum delays each way assumed). At local time `t` it is
///
///     z · √(σ₀² + (k · σₛ · (t − x_edges))²) + wander · (t − last sample)
///
/// with `z` = ``Configuration/boundSigmas`` (4.5) and `k` = ``Configuration/edgeGrowth`` (2),
/// calibrated in simulation (veth-like, uniform, exponential and two-stage jitter, 10 % loss) to
/// cover ≥ 99 % of evaluations while staying within 2–3× the p99 error (`Tests/…/Clock`).
/// Until ``Configuration/minStatisticalSamples`` samples are in, the hard bound is used.
/// *Hard* (any asymmetry): the best sample's bracket `θ ± δ/2` carried along the line by the
/// largest slope error the brackets allow. The estimate carries the smaller of the two. Between
/// exchanges the line is extrapolated.
///
/// **Delay steps** (review finding M6). A path whose minimum round trip jumps by `R` may have
/// moved the offset by up to `R/2` (one direction slowed: an on-path attacker, or a route
/// change), which no two-way exchange can see. Such a jump is an alarm, not "the path changed"
/// (`DelayStep`): the window restarts from the slower path, the statistical bound is widened by
/// up to `R/2` (less once comparing the fits before and after shows the rise shared by both
/// directions) until the path is back, and the estimate says so in
/// ``ClockEstimate/delayStep``. Round trips above ``Configuration/maxDelay`` are never used.
///
/// Cost: `onSample` is `O(n)` with `n` ≤ capacity (a sort of nearly sorted data, six hull passes,
/// a selection and a few scans: 65–80 µs at n = 512 in release, `tools/bench estimator`) and
/// allocates nothing after `init`; ``estimate(at:)`` is `O(1)`.
///
/// The simulations these figures come from are in `Tests/LockstepCoreTests/Clock/` (numbered
/// scenarios, as chrony's `test/simulation`).
///
/// Departures from NTP/chrony: no clock discipline (nothing is corrected, only estimated);
/// per-direction minimum filtering instead of a joint-delay filter; offsets from a fit under the
/// points instead of weighted least squares through them (least squares only helps with the
/// skew); no runs test to size the window (fixed size and age).
public struct ClockEstimator: Sendable {
    public let configuration: Configuration
    private var window: SampleWindow
    private var gate: SampleGate
    /// The window in local-time order, and the fit's buffers: scratch, reserved once.
    private var sorted: ContiguousArray<SampleWindow.Entry>
    private var scratch: EnvelopeFit.Scratch
    private var fit: EnvelopeFit.Fit?

    /// An estimator with an empty window.
    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
        self.window = SampleWindow(capacity: configuration.capacity, maxAgeNs: configuration.maxSampleAge.ns)
        self.gate = SampleGate(configuration: configuration)
        self.sorted = []
        self.sorted.reserveCapacity(configuration.capacity)
        self.scratch = EnvelopeFit.Scratch(capacity: configuration.capacity)
    }

    /// Number of samples in the window.
    public var sampleCount: Int { window.count }

    /// How many of the latest samples in a row were slow (the run a delay step is told by,
    /// ``Configuration/delayStepSamples`` long): a path that may be changing.
    public var slowRunLength: Int { gate.slowRun.count }

    /// Forgets everything: the peer restarted, its clock is a new epoch.
    public mutating func reset() {
        window.removeAll()
        gate.reset()
        fit = nil
    }

    // MARK: - Input

    /// Takes one exchange's timestamps; says whether it was used. A sample that may not
    /// `confirmStep` is judged as any other, but as an outlier it does not count towards the
    /// agreeing outliers that make a clock step.
    public mutating func onSample(_ sample: ClockSample, confirmStep: Bool = true) -> SampleVerdict {
        switch gate.judge(sample, against: fit, window: window, confirmStep: confirmStep) {
        case .reject(let verdict):
            return verdict
        case .keep:
            window.append(SampleWindow.Entry(sample))
            refit()
            return .accepted
        case .step(let by):
            // The window restarts from the samples that showed the step.
            restart(fromHeld: true)
            return .clockStepped(byNs: by)
        case .restart:
            // The path's delay stepped (or came back): the window restarts from the new path.
            restart(fromHeld: false)
            return .accepted
        }
    }

    // MARK: - Output

    /// The estimate at local time `now`, or nil before the first usable sample.
    public func estimate(at time: LocalTime) -> ClockEstimate? {
        guard let fit else { return nil }
        let now = time.ns
        let x = Double(now.subtractingSaturating(fit.reference))
        let wander = configuration.wanderPPM * 1e-6
        let hard = fit.hardBound(atLocal: now, wander: wander)
        let hardGrowth = (fit.hardSlopeError + wander) * 1e6
        var bound = hard
        var growth = hardGrowth
        let step = gate.delayStep
        if fit.statistical {
            let z = configuration.boundSigmas
            let k = configuration.edgeGrowth * fit.sigmaSlope
            let sigma = fit.sigma(atLocal: now, edgeGrowth: configuration.edgeGrowth)
            var statistical = z * sigma + wander * max(0, x)
            // A delay step's possible bias is not noise: it adds.
            statistical += step?.bias ?? 0
            if statistical < hard {
                bound = statistical
                growth = (z * k + wander) * 1e6
            }
        }
        return ClockEstimate(
            reference: time,
            offsetNs: fit.offset(atLocal: now),
            skewPPM: fit.slope * 1e6,
            errorBoundNs: bound,
            errorGrowthPPM: growth,
            hardBoundNs: hard,
            hardGrowthPPM: hardGrowth,
            delay: .nanoseconds(fit.minDelay),
            sampleCount: fit.count,
            lastSample: LocalTime(ns: fit.reference),
            delayStep: .nanoseconds(step.map { $0.explained ? 0 : $0.riseNs } ?? 0)
        )
    }

    // MARK: - Internals

    private mutating func refit() {
        window.sorted(into: &sorted)
        fit = EnvelopeFit.fit(sorted, configuration: configuration, scratch: &scratch)
        if let fit, gate.delayStep != nil { gate.measureDelayStep(fit) }
    }

    /// Restarts the window from the gate's held outliers or its run of slow samples. (Read in
    /// place, so that clearing them after does not copy the buffer.)
    private mutating func restart(fromHeld: Bool) {
        window.removeAll()
        if fromHeld {
            for s in gate.held { window.append(SampleWindow.Entry(s)) }
        } else {
            for s in gate.slowRun { window.append(SampleWindow.Entry(s)) }
        }
        gate.windowRestarted()
        refit()
    }
}
