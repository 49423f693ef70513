/// Estimates one peer's clock (offset and skew) from a window of four-timestamp exchanges.
///
/// One instance per peer, a value type: feed it samples with ``onSample(_:)``, ask it with
/// ``estimate(atLocal:)``. It does no I/O and reads no clock; every time is an argument.
///
/// Terms: each exchange gives two one-way measurements, `out = t2 − t1 = offset + d→ + j→` and
/// `back = t4 − t3 = −offset + d← + j←`, where `d` is a direction's minimum delay and `j ≥ 0` the
/// extra delay (queueing, scheduling) this packet met. `x` is local time (the exchange's
/// midpoint). The *envelope* of a direction is the straight line under all its points.
///
/// **Filtering: minimum delay, per direction.** Like NTP's clock filter (RFC 5905 §10) and
/// chrony's `sourcestats.c`, the estimator trusts the least-delayed samples, but it takes the
/// minimum *per direction*: the envelope of `out` and the envelope of `back`. A sample whose
/// request was slowed but whose reply was not still pins down the reply direction, so with `N`
/// samples each envelope is off by about the jitter's spread / `N`, where the joint minimum (one
/// sample fast both ways, which is what delay-weighted regression relies on) is off by the
/// spread / `√N`. With 5 ms ± 1 ms of jitter and 512 samples, each envelope is within a few µs
/// where the best joint sample is off by tens of µs.
/// Both envelopes assume the same thing as any two-way method: equal minimum delays each way.
///
/// **Regression.** Offset and skew come from a line against local time, as in chrony's
/// `SST_DoNewRegression`, but fitted under the points instead of through them (Moon, Skelly &
/// Towsley, "Estimation and removal of clock skew from network delay measurements", 1999): per
/// direction, the lower convex hull's edge above the window's mean time is the line that
/// minimises the summed distance to all points from below; the two directions see the skew with
/// opposite signs, and the estimate is the average of the two edges' slopes. The offset is then
/// half the difference of the two envelopes at that slope. The edges rest on a few samples each:
/// where delays vary little (a quiet LAN, kernel timestamps) least squares through the offsets of
/// the window's faster half, as chrony's regression, knows the skew several times better, while
/// under heavy jitter it knows it far worse. The two slopes are combined by their variances, and
/// the skew's scale is at least a quarter of their disagreement (path delays that drift over the
/// window bias both, differently). A skew measured over a short or noisy
/// window is shrunk towards zero by a prior (``Configuration/skewPriorPPM``), as a ridge
/// regression would; one sample gives zero skew. Between exchanges the line is extrapolated.
/// The window holds the last ``Configuration/capacity`` samples, none older than
/// ``Configuration/maxSampleAgeNs``.
///
/// **Bounds.** *Statistical* (equal minimum delays each way assumed): `μ`, the third-smallest
/// residual above each envelope (the envelope rests on one or two samples, so this is the first
/// or second gap), measures how far an envelope may sit above the truth; the offset's scale where
/// the edges rest is `σ₀ = √((μ→² + μ←²)/4 + floor²)`. The skew's scale `σₛ` is the larger of a
/// jackknife (re-fit each edge leaving out either end: an edge resting on one lucky sample moves)
/// and `μ / edge length`. At local time `t` the bound is
///
///     z · √(σ₀² + (k · σₛ · (t − x_edges))²) + wander · (t − last sample)
///
/// with `z` = ``Configuration/boundSigmas`` (4.5) and `k` = ``Configuration/edgeGrowth`` (2),
/// calibrated in simulation (veth-like, uniform, exponential and two-stage jitter, 10 % loss) to
/// cover ≥ 99 % of evaluations while staying within 2–3× the p99 error (`Tests/…/Clock`).
/// Until ``Configuration/minStatisticalSamples`` samples are in, the hard bound is used.
/// *Hard* (any asymmetry): each sample brackets the true offset within `θ ± δ/2`, so for the best
/// sample `i`, `δᵢ/2 + |line(xᵢ) − θᵢ| + skewErrorMax·|t − xᵢ|`, where `skewErrorMax` comes from
/// the brackets of the best sample in each half of the window (or ``Configuration/maxSkewPPM``).
///
/// **Outliers and steps.** A sample whose bracket `θ ± δ/2` misses the hard bound around the line
/// by more than ``Configuration/stepThresholdNs`` cannot come from this clock: it is held back
/// (``SampleVerdict/rejectedOutlier(residualNs:)``). When ``Configuration/stepConfirmations``
/// such samples come in a row and agree with each other, the peer's clock stepped: the window
/// restarts from them (``SampleVerdict/clockStepped(byNs:)``). Steps smaller than the hard bound
/// plus the threshold are not detected as steps; the envelopes absorb them as the window turns
/// over. Samples delayed far beyond the window's mean excess are not kept
/// (``SampleVerdict/rejectedDelay(excessNs:)``); the gate opens after several in a row (the path
/// changed). Such samples could not be on an envelope anyway, except one direction's.
///
/// Cost: `onSample` is `O(n)` with `n` ≤ capacity (a sort of nearly sorted data, six hull passes,
/// a selection and a few scans: 65–80 µs at n = 512 in release, `tools/bench estimator`) and allocates nothing after `init`;
/// ``estimate(atLocal:)`` is `O(1)`.
///
/// The simulations these figures come from are in `Tests/LockstepCoreTests/Clock/` (numbered
/// scenarios, as chrony's `test/simulation`).
///
/// Departures from NTP/chrony: no clock discipline (nothing is corrected, only estimated);
/// per-direction minimum filtering instead of a joint-delay filter; offsets from a fit under the
/// points instead of weighted least squares through them (least squares only helps with the
/// skew); no runs test to size the window (fixed size and age).
public struct ClockEstimator: Sendable {
    /// Tuning. The defaults suit a LAN and a 2–40 Hz exchange rate (``ExchangeScheduler``).
    public struct Configuration: Sendable, Equatable {
        /// Most samples in the window (memory: 24 bytes each, plus scratch of the same order).
        public var capacity: Int
        /// Samples older than this (relative to the newest) leave the window. Longer windows
        /// average more but trust the skew to stay constant for longer.
        public var maxSampleAgeNs: Int64
        /// Scale of offset noise that no delay shows (timestamp resolution), in ns.
        public var noiseFloorNs: Double
        /// `z`: the statistical bound is this many scales (see the type's documentation).
        public var boundSigmas: Double
        /// `k`: weight of the skew's scale in the bound, away from where the envelopes rest.
        public var edgeGrowth: Double
        /// Samples needed before the statistical bound is used (the hard bound until then).
        public var minStatisticalSamples: Int
        /// Assumed clock wander: how fast the offset may drift away from the line, in ppm. A
        /// crystal wanders far less than this over a second; a clock being slewed by NTP does not
        /// (run the agent on a clock nobody slews, or expect bounds to be broken while it is).
        public var wanderPPM: Double
        /// The largest skew believed possible, in ppm.
        public var maxSkewPPM: Double
        /// Prior standard deviation of the skew, in ppm: a skew measured over a short or noisy
        /// window is shrunk towards zero by `prior² / (prior² + σₛ²)`.
        public var skewPriorPPM: Double
        /// A sample whose delay excess exceeds this multiple of the window's mean excess is not kept…
        public var delayGateFactor: Double
        /// …unless its excess is below this, in nanoseconds.
        public var minDelayGateNs: Int64
        /// After this many delay rejections in a row, the gate opens (the path has changed).
        public var maxConsecutiveDelayRejections: Int
        /// How far outside the hard bound a sample must fall to count as a clock step, in ns.
        public var stepThresholdNs: Double
        /// How many agreeing outliers in a row make a clock step.
        public var stepConfirmations: Int

        public init(
            capacity: Int = 512,
            maxSampleAgeNs: Int64 = 60 * Nanos.second,
            noiseFloorNs: Double = 10,
            boundSigmas: Double = 4.5,
            edgeGrowth: Double = 2,
            minStatisticalSamples: Int = 4,
            wanderPPM: Double = 0.05,
            maxSkewPPM: Double = 1000,
            skewPriorPPM: Double = 300,
            delayGateFactor: Double = 8,
            minDelayGateNs: Int64 = 50 * Nanos.microsecond,
            maxConsecutiveDelayRejections: Int = 8,
            stepThresholdNs: Double = 100_000,
            stepConfirmations: Int = 3
        ) {
            precondition(capacity >= 4 && stepConfirmations >= 1 && minStatisticalSamples >= 3)
            self.capacity = capacity
            self.maxSampleAgeNs = maxSampleAgeNs
            self.noiseFloorNs = noiseFloorNs
            self.boundSigmas = boundSigmas
            self.edgeGrowth = edgeGrowth
            self.minStatisticalSamples = minStatisticalSamples
            self.wanderPPM = wanderPPM
            self.maxSkewPPM = maxSkewPPM
            self.skewPriorPPM = skewPriorPPM
            self.delayGateFactor = delayGateFactor
            self.minDelayGateNs = minDelayGateNs
            self.maxConsecutiveDelayRejections = maxConsecutiveDelayRejections
            self.stepThresholdNs = stepThresholdNs
            self.stepConfirmations = stepConfirmations
        }
    }

    /// What happened to a sample.
    public enum SampleVerdict: Sendable, Equatable {
        /// Used in the estimate.
        case accepted
        /// Impossible timestamps (overflow, time running backwards, negative delay).
        case rejectedInvalid
        /// Delayed too much (queueing, scheduling) to be worth keeping; `excessNs` over the minimum.
        case rejectedDelay(excessNs: Int64)
        /// Inconsistent with the estimate beyond any path asymmetry; held as evidence of a step.
        case rejectedOutlier(residualNs: Double)
        /// The peer's clock jumped by about `byNs`: the window was restarted from the new samples.
        /// The caller should speed exchanges up again (``ExchangeScheduler/restartBurst(atLocal:)``).
        case clockStepped(byNs: Double)
    }

    /// A sample as kept in the window.
    struct Entry: Sendable {
        /// Midpoint, local clock.
        var local: Int64
        /// `t2 − t1`.
        var out: Int64
        /// `t4 − t3`.
        var back: Int64

        init(local: Int64, out: Int64, back: Int64) {
            self.local = local
            self.out = out
            self.back = back
        }

        init(_ s: ClockSample) {
            self.init(local: s.midpointLocal, out: s.t2 &- s.t1, back: s.t4 &- s.t3)
        }

        var offset: Double { (Double(out) - Double(back)) / 2 }
        var delay: Int64 { out &+ back }
    }

    /// The fit's result, relative to `reference` (the newest sample's local time).
    struct Fit: Sendable {
        var reference: Int64
        /// Offset at `reference`.
        var offset: Double
        /// Skew as a ratio (ns per ns).
        var slope: Double
        /// Where the envelopes rest (the middle of the hull edges that give the skew), relative
        /// to `reference` (≤ 0), ns.
        var support: Double
        /// Scale of the offset's error at `support`, ns (σ₀).
        var sigmaOffset: Double
        /// Scale of the skew's error, as a ratio (σₛ).
        var sigmaSlope: Double
        /// Hard bound at `reference`, ns.
        var hardBound: Double
        /// Hard bound on the slope's error (ratio).
        var hardSlopeError: Double
        var minDelay: Int64
        var count: Int
        /// True when the statistical bound means something.
        var statistical: Bool
    }

    public let configuration: Configuration
    /// Fixed-capacity ring of samples, oldest at `head`.
    private var ring: ContiguousArray<Entry>
    private var head = 0
    private var count = 0
    /// Scratch space for the fit, allocated once.
    private var sorted: ContiguousArray<Entry>
    private var hullOut: ContiguousArray<Int>
    private var hullBack: ContiguousArray<Int>
    private var hullScratch: ContiguousArray<Int>
    private var residuals: ContiguousArray<Double>
    /// Outliers waiting for confirmation of a step.
    private var pending: ContiguousArray<ClockSample>
    private var consecutiveDelayRejections = 0
    private var fit: Fit?

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
        let capacity = configuration.capacity
        self.ring = ContiguousArray(repeating: Entry(local: 0, out: 0, back: 0), count: capacity)
        self.sorted = []
        self.sorted.reserveCapacity(capacity)
        self.hullOut = []
        self.hullOut.reserveCapacity(capacity)
        self.hullBack = []
        self.hullBack.reserveCapacity(capacity)
        self.hullScratch = []
        self.hullScratch.reserveCapacity(capacity)
        self.residuals = []
        self.residuals.reserveCapacity(capacity)
        self.pending = []
        self.pending.reserveCapacity(configuration.stepConfirmations)
    }

    /// Number of samples in the window.
    public var sampleCount: Int { count }

    /// Forgets everything: the peer restarted, its clock is a new epoch.
    public mutating func reset() {
        head = 0
        count = 0
        pending.removeAll(keepingCapacity: true)
        consecutiveDelayRejections = 0
        fit = nil
    }

    // MARK: - Input

    /// Takes one exchange's timestamps; says whether it was used.
    public mutating func onSample(_ sample: ClockSample) -> SampleVerdict {
        guard sample.isValid else { return .rejectedInvalid }
        let offset = sample.offset
        let delay = sample.delay
        let local = sample.midpointLocal

        if let fit, count >= 2 {
            // A sample that cannot be reconciled with the line, whatever the path asymmetry.
            let residual = offset - predict(fit, atLocal: local)
            let allowed = Double(delay) / 2 + hardBound(fit, atLocal: local) + configuration.stepThresholdNs
            if residual.magnitude > allowed {
                return onOutlier(sample, residual: residual, slope: fit.slope)
            }
            // A sample slowed down far more than the others. After several in a row the path has
            // changed: the gate stays open until a sample passes it on its own again.
            let excess = delay &- fit.minDelay
            if excess > delayGate(minDelay: fit.minDelay) {
                consecutiveDelayRejections += 1
                if consecutiveDelayRejections < configuration.maxConsecutiveDelayRejections {
                    return .rejectedDelay(excessNs: excess)
                }
            } else {
                consecutiveDelayRejections = 0
            }
        }
        pending.removeAll(keepingCapacity: true)
        append(Entry(sample))
        refit()
        return .accepted
    }

    // MARK: - Output

    /// The estimate at local time `now`, or nil before the first usable sample.
    public func estimate(atLocal now: Int64) -> ClockEstimate? {
        guard let fit else { return nil }
        let x = Double(now &- fit.reference)
        let wander = configuration.wanderPPM * 1e-6
        let hard = hardBound(fit, atLocal: now)
        let hardGrowth = (fit.hardSlopeError + wander) * 1e6
        var bound = hard
        var growth = hardGrowth
        if fit.statistical {
            let z = configuration.boundSigmas
            let k = configuration.edgeGrowth * fit.sigmaSlope
            let dx = x - fit.support
            let sigma = (fit.sigmaOffset * fit.sigmaOffset + k * k * dx * dx).squareRoot()
            let statistical = z * sigma + wander * max(0, x)
            if statistical < hard {
                bound = statistical
                growth = (z * k + wander) * 1e6
            }
        }
        return ClockEstimate(
            referenceLocal: now,
            offsetNs: predict(fit, atLocal: now),
            skewPPM: fit.slope * 1e6,
            errorBoundNs: bound,
            errorGrowthPPM: growth,
            hardBoundNs: hard,
            hardGrowthPPM: hardGrowth,
            delayNs: fit.minDelay,
            sampleCount: fit.count,
            lastSampleLocal: fit.reference
        )
    }

    // MARK: - Internals

    @inline(__always)
    private func predict(_ fit: Fit, atLocal t: Int64) -> Double {
        fit.offset + fit.slope * Double(t &- fit.reference)
    }

    @inline(__always)
    private func hardBound(_ fit: Fit, atLocal t: Int64) -> Double {
        fit.hardBound + (fit.hardSlopeError + configuration.wanderPPM * 1e-6) * Double(t &- fit.reference).magnitude
    }

    /// The delay excess above which a sample is not kept.
    private func delayGate(minDelay: Int64) -> Int64 {
        var sum = 0.0
        forEachEntry { sum += Double($0.delay &- minDelay) }
        let mean = count > 0 ? sum / Double(count) : 0
        return max(configuration.minDelayGateNs, Int64(configuration.delayGateFactor * mean))
    }

    private mutating func onOutlier(_ sample: ClockSample, residual: Double, slope: Double) -> SampleVerdict {
        if pending.count == configuration.stepConfirmations { pending.removeFirst() }
        pending.append(sample)
        guard pending.count == configuration.stepConfirmations else { return .rejectedOutlier(residualNs: residual) }
        // Do the held samples agree with each other (allowing for the skew between them)?
        let first = pending[0]
        for s in pending.dropFirst() {
            let drift = slope * Double(s.midpointLocal &- first.midpointLocal)
            let gap = (s.offset - first.offset - drift).magnitude
            if gap > Double(s.delay &+ first.delay) / 2 + configuration.stepThresholdNs {
                return .rejectedOutlier(residualNs: residual)
            }
        }
        let held = pending
        reset()
        for s in held { append(Entry(s)) }
        refit()
        return .clockStepped(byNs: residual)
    }

    private mutating func append(_ entry: Entry) {
        let capacity = ring.count
        if count == capacity {
            ring[head] = entry
            head = (head + 1) % capacity
        } else {
            ring[(head + count) % capacity] = entry
            count += 1
        }
        // Age out (the ring is in arrival order, close enough to time order).
        while count > 1, entry.local &- ring[head].local > configuration.maxSampleAgeNs {
            head = (head + 1) % capacity
            count -= 1
        }
    }

    @inline(__always)
    private func forEachEntry(_ body: (Entry) -> Void) {
        let capacity = ring.count
        var i = head
        for _ in 0..<count {
            body(ring[i])
            i += 1
            if i == capacity { i = 0 }
        }
    }

    /// Fits the lower envelopes of both directions with a shared skew, and the bounds.
    private mutating func refit() {
        guard count > 0 else {
            fit = nil
            return
        }
        // The window in local-time order (it arrives nearly sorted: insertion sort is linear).
        // (Direct loops over stored properties, so that no copy of `self` shares the buffers.)
        sorted.removeAll(keepingCapacity: true)
        var slot = head
        for _ in 0..<count {
            let e = ring[slot]
            slot = slot + 1 == ring.count ? 0 : slot + 1
            sorted.append(e)
            var j = sorted.count - 1
            while j > 0, sorted[j - 1].local > e.local {
                sorted[j] = sorted[j - 1]
                j -= 1
            }
            sorted[j] = e
        }
        let n = sorted.count
        let reference = sorted[n - 1].local
        let outBase = sorted[n - 1].out
        let backBase = sorted[n - 1].back
        @inline(__always) func x(_ e: Entry) -> Double { Double(e.local &- reference) }
        @inline(__always) func a(_ e: Entry) -> Double { Double(e.out &- outBase) }
        @inline(__always) func r(_ e: Entry) -> Double { Double(e.back &- backBase) }

        // Lower convex hulls of (x, out) and (x, back) (Andrew's monotone chain).
        Self.lowerHull(of: sorted, value: a, into: &hullOut)
        Self.lowerHull(of: sorted, value: r, into: &hullBack)

        // The skew: per direction, the hull's edge above the middle of the window (the
        // support line of the envelope there); the two directions see the skew with opposite
        // signs, their average is the estimate. Its uncertainty is measured by leaving out each
        // end of each edge in turn (a jackknife): an edge that rests on one lucky sample moves.
        let maxSkew = configuration.maxSkewPPM * 1e-6
        var slope = 0.0
        var sigmaSlope = 0.0
        var support = x(sorted[0]) / 2
        var edgeLengths: (Double, Double)?
        if hullOut.count >= 2, hullBack.count >= 2 {
            var sum = 0.0
            for e in sorted { sum += x(e) }
            let middle = sum / Double(n)
            func centreEdge(_ hull: ContiguousArray<Int>, _ value: (Entry) -> Double) -> (slope: Double, p: Int, q: Int) {
                var k = 0
                while k < hull.count - 2, x(sorted[hull[k + 1]]) < middle { k += 1 }
                let p = sorted[hull[k]], q = sorted[hull[k + 1]]
                return ((value(q) - value(p)) / (x(q) - x(p)), hull[k], hull[k + 1])
            }
            let o = centreEdge(hullOut, a)
            let b = centreEdge(hullBack, r)
            slope = min(max((o.slope - b.slope) / 2, -maxSkew), maxSkew)
            support = (x(sorted[o.p]) + x(sorted[o.q]) + x(sorted[b.p]) + x(sorted[b.q])) / 4

            var spread = 0.0
            func jackknife(_ edge: (slope: Double, p: Int, q: Int), leaving left: Int, _ value: (Entry) -> Double) {
                Self.lowerHull(of: sorted, value: value, excluding: left, into: &hullScratch)
                guard hullScratch.count >= 2 else { return }
                let d = centreEdge(hullScratch, value).slope - edge.slope
                spread += d * d
            }
            jackknife(o, leaving: o.p, a)
            jackknife(o, leaving: o.q, a)
            jackknife(b, leaving: b.p, r)
            jackknife(b, leaving: b.q, r)
            // Four leave-one-out slopes; each direction's error enters the average halved.
            sigmaSlope = (spread / 8).squareRoot()
            edgeLengths = (x(sorted[o.q]) - x(sorted[o.p]), x(sorted[b.q]) - x(sorted[b.p]))
        }

        // The envelopes at a given skew: min(out − s·x) and min(back + s·x).
        func envelopes(_ slope: Double) -> (alpha: Double, rho: Double) {
            var alpha = Double.infinity
            var rho = Double.infinity
            for e in sorted {
                alpha = min(alpha, a(e) - slope * x(e))
                rho = min(rho, r(e) + slope * x(e))
            }
            return (alpha, rho)
        }

        // Statistical scale: how far above its envelope each direction's third-best sample sits
        // (μ). The offset's error is about (μ→ − μ←)/2 where the edges rest; the skew's is about
        // μ / (edge length) per direction, halved by averaging the two.
        var (alpha, rho) = envelopes(slope)
        if let (lo, lb) = edgeLengths {
            let so = scale(residual: { a($0) - slope * x($0) - alpha }) / lo
            let sb = scale(residual: { r($0) + slope * x($0) - rho }) / lb
            sigmaSlope = max(sigmaSlope, ((so * so + sb * sb) / 2).squareRoot())
            // A second view of the skew: least squares through the offsets of the faster half
            // of the window (chrony's regression, with the slower half left out instead of
            // weighted down). Where delays vary little (a quiet LAN) it is several times more
            // precise than edges resting on a few samples; under heavy jitter it is far less.
            // The two are combined by their variances, so each link gets the better one; but
            // where they disagree (path delays drifting over the window bias both, differently),
            // the skew is no better known than their disagreement says.
            if let ls = leastSquaresSlope(x: x, a: a, r: r), sigmaSlope > 0 {
                let wh = 1 / (sigmaSlope * sigmaSlope), wl = 1 / (ls.sigma * ls.sigma)
                // (A quarter: the bound multiplies the skew's scale by z·k = 9, and the truth is
                // rarely beyond the two.)
                let disagreement = (slope - ls.slope).magnitude / 4
                slope = min(max((wh * slope + wl * ls.slope) / (wh + wl), -maxSkew), maxSkew)
                sigmaSlope = max((1 / (wh + wl)).squareRoot(), disagreement)
            }
            // A short or noisy window says little about the skew: shrink it towards zero with
            // the prior (a Gaussian prior of ``Configuration/skewPriorPPM``), as a ridge would.
            let prior = configuration.skewPriorPPM * 1e-6
            let w = prior * prior / (prior * prior + sigmaSlope * sigmaSlope)
            slope *= w
            sigmaSlope *= w.squareRoot()
            (alpha, rho) = envelopes(slope)
        }
        // offset = (out − back) / 2 on the envelopes, at x = 0.
        let offsetAtReference = (Double(outBase &- backBase) + alpha - rho) / 2
        let muOut = scale(residual: { a($0) - slope * x($0) - alpha })
        let muBack = scale(residual: { r($0) + slope * x($0) - rho })
        var minDelay = Int64.max
        for e in sorted { minDelay = min(minDelay, e.delay) }
        let floor = configuration.noiseFloorNs
        let sigmaOffset = ((muOut * muOut + muBack * muBack) / 4 + floor * floor).squareRoot()
        // Hard bound on the slope's error: the best sample of each half of the window brackets
        // the true offset within ±δ/2, so the true slope lies within the chord's range.
        let wander = configuration.wanderPPM * 1e-6
        var hardSlopeError = maxSkew + slope.magnitude
        let middle = x(sorted[0]) / 2
        var early: Entry?
        var late: Entry?
        for e in sorted {
            if x(e) < middle {
                if e.delay < early?.delay ?? .max { early = e }
            } else if e.delay < late?.delay ?? .max {
                late = e
            }
        }
        if let early, let late, late.local > early.local {
            let span = Double(late.local &- early.local)
            let chord = (late.offset - early.offset) / span
            let halfWidth = Double(early.delay &+ late.delay) / 2 / span + wander
            hardSlopeError = min(hardSlopeError, max((slope - (chord - halfWidth)).magnitude, (chord + halfWidth - slope).magnitude))
        }

        // Hard bound at the reference: the best sample's bracket, carried along the slope.
        var hard = Double.infinity
        for e in sorted {
            let line = offsetAtReference + slope * x(e)
            hard = min(hard, Double(e.delay) / 2 + (line - e.offset).magnitude + (hardSlopeError + wander) * x(e).magnitude)
        }

        fit = Fit(
            reference: reference,
            offset: offsetAtReference,
            slope: slope,
            support: support,
            sigmaOffset: sigmaOffset,
            sigmaSlope: sigmaSlope,
            hardBound: hard,
            hardSlopeError: hardSlopeError,
            minDelay: minDelay,
            count: n,
            statistical: n >= configuration.minStatisticalSamples
        )
    }

    /// The least-squares slope of the offsets `(a − r)/2` against `x` over the samples whose round
    /// trip is at most the window's median, and its standard error (inflated by
    /// ``lsSigmaInflation``: neighbouring samples' errors are not independent); nil with fewer than
    /// 8 such samples or no spread in time. Allocation-free (the reserved scratch buffer).
    private mutating func leastSquaresSlope(x: (Entry) -> Double, a: (Entry) -> Double, r: (Entry) -> Double) -> (slope: Double, sigma: Double)? {
        let n = sorted.count
        guard n >= 8 else { return nil }
        residuals.removeAll(keepingCapacity: true)
        for e in sorted { residuals.append(Double(e.delay)) }
        let median = Self.select(&residuals, k: (n - 1) / 2)
        var count = 0.0, sx = 0.0, sy = 0.0
        for e in sorted where Double(e.delay) <= median {
            count += 1
            sx += x(e)
            sy += (a(e) - r(e)) / 2
        }
        guard count >= 8 else { return nil }
        let mx = sx / count, my = sy / count
        var sxx = 0.0, sxy = 0.0
        for e in sorted where Double(e.delay) <= median {
            let dx = x(e) - mx
            sxx += dx * dx
            sxy += dx * ((a(e) - r(e)) / 2 - my)
        }
        guard sxx > 0 else { return nil }
        let slope = sxy / sxx
        var sse = 0.0
        for e in sorted where Double(e.delay) <= median {
            let d = (a(e) - r(e)) / 2 - my - slope * (x(e) - mx)
            sse += d * d
        }
        let variance = max(sse / (count - 2), configuration.noiseFloorNs * configuration.noiseFloorNs)
        return (slope, Self.lsSigmaInflation * (variance / sxx).squareRoot())
    }

    /// Margin on the least-squares slope's standard error: path delays drift (queues and
    /// scheduling change over seconds), so residuals of neighbouring samples are correlated and
    /// the textbook error is optimistic.
    static let lsSigmaInflation = 2.0

    /// The `k`-th smallest value (0-based) of `values`, which it reorders (quickselect).
    private static func select(_ values: inout ContiguousArray<Double>, k: Int) -> Double {
        var lo = 0, hi = values.count - 1
        while lo < hi {
            let pivot = values[(lo + hi) / 2]
            var i = lo, j = hi
            while i <= j {
                while values[i] < pivot { i += 1 }
                while values[j] > pivot { j -= 1 }
                if i <= j {
                    values.swapAt(i, j)
                    i += 1
                    j -= 1
                }
            }
            if k <= j { hi = j } else if k >= i { lo = i } else { return values[k] }
        }
        return values[k]
    }

    /// How far above an envelope its third-best sample sits: the envelope rests on one or two
    /// samples (residual 0), so this is the first or second gap, a scale for how far the
    /// envelope itself may sit above the truth. Allocation-free (a reserved scratch buffer).
    private mutating func scale(residual: (Entry) -> Double) -> Double {
        residuals.removeAll(keepingCapacity: true)
        for e in sorted { residuals.append(max(0, residual(e))) }
        // The third smallest (or the largest, with fewer).
        let k = min(3, residuals.count)
        guard k > 0 else { return 0 }
        return Self.select(&residuals, k: k - 1)
    }

    /// Andrew's monotone chain over points sorted by local time: the indices of the lower hull's
    /// vertices of `(local, value)`, leaving out the point at `excluding`.
    private static func lowerHull(
        of points: ContiguousArray<Entry>,
        value: (Entry) -> Double,
        excluding: Int = -1,
        into hull: inout ContiguousArray<Int>
    ) {
        hull.removeAll(keepingCapacity: true)
        guard let reference = points.last?.local else { return }
        for i in points.indices where i != excluding {
            let p = points[i]
            let px = Double(p.local &- reference), py = value(p)
            if let last = hull.last, points[last].local == p.local {
                // Same time: keep the lower.
                if value(points[last]) <= py { continue }
                hull.removeLast()
            }
            while hull.count >= 2 {
                let o = points[hull[hull.count - 2]], q = points[hull[hull.count - 1]]
                let ox = Double(o.local &- reference), qx = Double(q.local &- reference)
                let cross = (qx - ox) * (py - value(o)) - (value(q) - value(o)) * (px - ox)
                if cross > 0 { break }
                hull.removeLast()
            }
            hull.append(i)
        }
    }
}
