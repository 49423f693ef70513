/// Offset, skew and their bounds from a window of samples: lines fitted *under* each direction's
/// points, not through them.
///
/// Terms: each exchange gives two one-way measurements, `out = t2 − t1 = offset + d→ + j→` and
/// `back = t4 − t3 = −offset + d← + j←`, where `d` is a direction's minimum delay and `j ≥ 0` the
/// extra delay (queueing, scheduling) this packet met. `x` is local time (the exchange's
/// midpoint). The *envelope* of a direction is the straight line under all its points.
///
/// **Filtering: minimum delay, per direction.** Like NTP's clock filter (RFC 5905 §10) and
/// chrony's `sourcestats.c`, the fit trusts the least-delayed samples, but it takes the minimum
/// *per direction*: the envelope of `out` and the envelope of `back`. A sample whose request was
/// slowed but whose reply was not still pins down the reply direction, so with `N` samples each
/// envelope is off by about the jitter's spread / `N`, where the joint minimum (one sample fast
/// both ways, which is what delay-weighted regression relies on) is off by the spread / `√N`.
/// With 5 ms ± 1 ms of jitter and 512 samples, each envelope is within a few µs where the best
/// joint sample is off by tens of µs. Both envelopes assume the same thing as any two-way method:
/// equal minimum delays each way.
///
/// **Regression.** Offset and skew come from a line against local time, as in chrony's
/// `SST_DoNewRegression`, but fitted under the points instead of through them (Moon, Skelly &
/// Towsley, "Estimation and removal of clock skew from network delay measurements", 1999): per
/// direction, the lower convex hull's edge above the window's mean time is the line that
/// minimises the summed distance to all points from below (``centreEdge(of:_:_:middle:value:)``); the
/// two directions see the skew with opposite signs, and the estimate is the average of the two
/// edges' slopes. The offset is then half the difference of the two envelopes at that slope. The
/// edges rest on a few samples each: where delays vary little (a quiet LAN, kernel timestamps)
/// least squares through the offsets of the window's faster half, as chrony's regression, knows
/// the skew several times better (``leastSquaresSlope(_:_:noiseFloorNs:residuals:)``), while
/// under heavy jitter it knows it far worse. The two slopes are combined by their variances, and
/// the skew's scale is at least a quarter of their disagreement (path delays that drift over the
/// window bias both, differently) (``combined(_:_:maxSkew:)``). A skew measured over a short or
/// noisy window is shrunk towards zero by a prior (``shrunk(_:priorPPM:)``), as a ridge regression
/// would; one sample gives zero skew.
///
/// **Scales.** *Statistical* (equal minimum delays each way assumed): `μ`, the third-smallest
/// residual above each envelope (the envelope rests on one or two samples, so this is the first
/// or second gap, ``scale(_:residuals:residual:)``), measures how far an envelope may sit above
/// the truth; the offset's scale where the edges rest is `σ₀ = √((μ→² + μ←²)/4 + floor²)`. The
/// skew's scale `σₛ` is the larger of a jackknife (re-fit each edge leaving out either end: an
/// edge resting on one lucky sample moves) and `μ / edge length`, and at least a quarter of the
/// two directions' disagreement about the skew (a minimum delay drifting one way only tilts one
/// edge: ``directionsShare``). *Hard* (any asymmetry): each
/// sample brackets the true offset within `θ ± δ/2`, so for the best sample `i`,
/// `δᵢ/2 + |line(xᵢ) − θᵢ| + skewErrorMax·|t − xᵢ|`, where `skewErrorMax` comes from the brackets
/// of the best sample in each half of the window, or the largest skew believed possible
/// (``hardBounds(_:_:offset:slope:maxSkew:wander:)``). How ``ClockEstimator`` turns these into
/// bounds is in its documentation.
///
/// Pure: ``fit(_:configuration:scratch:)`` reads the samples and writes only `scratch`, whose
/// buffers are reserved once, so a fit allocates nothing. Each step is a static function of its
/// own, callable alone.
enum EnvelopeFit {
    typealias Entry = SampleWindow.Entry

    /// The fit's result, relative to `reference` (the newest sample's local time).
    struct Fit: Sendable, Equatable {
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
        /// The smallest round trip in the window, ns.
        var minDelay: Int64
        /// The round trip of the envelopes (the sum of the two directions' minimum delays) at
        /// `reference`, ns: at most ``minDelay``, which needs one sample fast both ways.
        var envelopeDelay: Double
        var count: Int
        /// True when the statistical bound means something.
        var statistical: Bool

        /// The offset on the fitted line at local time `t`.
        @inline(__always)
        func offset(atLocal t: Int64) -> Double {
            offset + slope * Double(t &- reference)
        }

        /// The hard bound at local time `t`, the clock allowed to wander by `wander` (a ratio).
        @inline(__always)
        func hardBound(atLocal t: Int64, wander: Double) -> Double {
            hardBound + (hardSlopeError + wander) * Double(t &- reference).magnitude
        }

        /// The offset's statistical scale at local time `t`: `√(σ₀² + (k · σₛ · (t − x_edges))²)`
        /// with `k` = `edgeGrowth`.
        @inline(__always)
        func sigma(atLocal t: Int64, edgeGrowth: Double) -> Double {
            let k = edgeGrowth * sigmaSlope
            let dx = Double(t &- reference) - support
            return (sigmaOffset * sigmaOffset + k * k * dx * dx).squareRoot()
        }
    }

    /// Buffers for a fit, reserved once for `capacity` samples.
    struct Scratch: Sendable {
        var hullOut: ContiguousArray<Int> = []
        var hullBack: ContiguousArray<Int> = []
        var hullScratch: ContiguousArray<Int> = []
        var residuals: ContiguousArray<Double> = []

        init(capacity: Int) {
            hullOut.reserveCapacity(capacity)
            hullBack.reserveCapacity(capacity)
            hullScratch.reserveCapacity(capacity)
            residuals.reserveCapacity(capacity)
        }
    }

    /// Coordinates relative to the newest sample: `x` its local time, `a` and `r` its two one-way
    /// measurements (differences of integers first, so that Doubles keep every nanosecond).
    struct Frame {
        let reference: Int64
        let outBase: Int64
        let backBase: Int64

        init(_ newest: Entry) {
            reference = newest.local
            outBase = newest.out
            backBase = newest.back
        }

        @inline(__always) func x(_ e: Entry) -> Double { Double(e.local &- reference) }
        @inline(__always) func a(_ e: Entry) -> Double { Double(e.out &- outBase) }
        @inline(__always) func r(_ e: Entry) -> Double { Double(e.back &- backBase) }
        /// The sample's offset, relative to the newest's.
        @inline(__always) func y(_ e: Entry) -> Double { (a(e) - r(e)) / 2 }
    }

    /// A hull edge: its slope and the indices (into the samples) of its ends.
    typealias Edge = (slope: Double, p: Int, q: Int)

    /// The skew as the edges give it, before least squares and the prior.
    struct EdgeSkew {
        var slope = 0.0
        var sigma = 0.0
        /// How far apart the two directions' views of the skew are (`|out edge − (−back edge)|`,
        /// a ratio): a minimum delay that drifted in one direction only tilts that direction's
        /// edge alone, and biases the skew by half this.
        var directions = 0.0
        /// Where the edges rest, relative to the reference.
        var support: Double
        /// The two edges' lengths in local time (nil: too few hull points for edges).
        var edgeLengths: (out: Double, back: Double)?
    }

    // MARK: - The fit

    /// Fits the lower envelopes of both directions with a shared skew, and the scales and hard
    /// bound. `sorted` is the window in local-time order; nil when it is empty.
    static func fit(_ sorted: ContiguousArray<Entry>, configuration: ClockEstimator.Configuration, scratch: inout Scratch) -> Fit? {
        guard let newest = sorted.last else { return nil }
        let n = sorted.count
        let frame = Frame(newest)
        let maxSkew = configuration.maxSkewPPM * 1e-6

        LowerHull.build(of: sorted, value: { frame.a($0) }, into: &scratch.hullOut)
        LowerHull.build(of: sorted, value: { frame.r($0) }, into: &scratch.hullBack)
        var skew = edgeSkew(sorted, frame, maxSkew: maxSkew, scratch: &scratch)

        var (alpha, rho) = envelopes(sorted, frame, slope: skew.slope)
        if let lengths = skew.edgeLengths {
            let edgeSlope = skew.slope
            let so = scale(sorted) { frame.a($0) - edgeSlope * frame.x($0) - alpha } / lengths.out
            let sb = scale(sorted) { frame.r($0) + edgeSlope * frame.x($0) - rho } / lengths.back
            skew.sigma = max(skew.sigma, ((so * so + sb * sb) / 2).squareRoot())
            if let ls = leastSquaresSlope(sorted, frame, noiseFloorNs: configuration.noiseFloorNs, residuals: &scratch.residuals),
                skew.sigma > 0
            {
                skew = combined(skew, ls, maxSkew: maxSkew)
            }
            skew.sigma = max(skew.sigma, skew.directions / Self.directionsShare)
            skew = shrunk(skew, priorPPM: configuration.skewPriorPPM)
            (alpha, rho) = envelopes(sorted, frame, slope: skew.slope)
        }
        let slope = skew.slope
        // offset = (out − back) / 2 on the envelopes, at x = 0.
        let offset = (Double(frame.outBase &- frame.backBase) + alpha - rho) / 2
        let muOut = scale(sorted) { frame.a($0) - slope * frame.x($0) - alpha }
        let muBack = scale(sorted) { frame.r($0) + slope * frame.x($0) - rho }
        var minDelay = Int64.max
        for e in sorted { minDelay = min(minDelay, e.delay) }
        let floor = configuration.noiseFloorNs
        let sigmaOffset = ((muOut * muOut + muBack * muBack) / 4 + floor * floor).squareRoot()
        let hard = hardBounds(sorted, frame, offset: offset, slope: slope, maxSkew: maxSkew, wander: configuration.wanderPPM * 1e-6)

        return Fit(
            reference: frame.reference,
            offset: offset,
            slope: slope,
            support: skew.support,
            sigmaOffset: sigmaOffset,
            sigmaSlope: skew.sigma,
            hardBound: hard.bound,
            hardSlopeError: hard.slopeError,
            minDelay: minDelay,
            envelopeDelay: Double(frame.outBase &+ frame.backBase) + alpha + rho,
            count: n,
            statistical: n >= configuration.minStatisticalSamples
        )
    }

    // MARK: - Steps

    /// The skew from the hulls in `scratch` (``LowerHull/build(of:value:excluding:into:)`` of
    /// `a` and of `r`): per direction, the hull's edge above the middle of the window (the
    /// support line of the envelope there); the two directions see the skew with opposite signs,
    /// their average is the estimate, clamped to `±maxSkew`. Its scale is measured by leaving out
    /// each end of each edge in turn (a jackknife): an edge that rests on one lucky sample moves.
    static func edgeSkew(_ sorted: ContiguousArray<Entry>, _ frame: Frame, maxSkew: Double, scratch: inout Scratch) -> EdgeSkew {
        var skew = EdgeSkew(support: frame.x(sorted[0]) / 2)
        guard scratch.hullOut.count >= 2, scratch.hullBack.count >= 2 else { return skew }
        var sum = 0.0
        for e in sorted { sum += frame.x(e) }
        let middle = sum / Double(sorted.count)
        let o = centreEdge(of: scratch.hullOut, sorted, frame, middle: middle) { frame.a($0) }
        let b = centreEdge(of: scratch.hullBack, sorted, frame, middle: middle) { frame.r($0) }
        skew.slope = min(max((o.slope - b.slope) / 2, -maxSkew), maxSkew)
        skew.directions = (o.slope + b.slope).magnitude
        let (op, oq) = (frame.x(sorted[o.p]), frame.x(sorted[o.q]))
        let (bp, bq) = (frame.x(sorted[b.p]), frame.x(sorted[b.q]))
        skew.support = (op + oq + bp + bq) / 4

        var spread = jackknife(o, leaving: o.p, sorted, frame, middle: middle, hull: &scratch.hullScratch) { frame.a($0) }
        spread += jackknife(o, leaving: o.q, sorted, frame, middle: middle, hull: &scratch.hullScratch) { frame.a($0) }
        spread += jackknife(b, leaving: b.p, sorted, frame, middle: middle, hull: &scratch.hullScratch) { frame.r($0) }
        spread += jackknife(b, leaving: b.q, sorted, frame, middle: middle, hull: &scratch.hullScratch) { frame.r($0) }
        // Four leave-one-out slopes; each direction's error enters the average halved.
        skew.sigma = (spread / 8).squareRoot()
        skew.edgeLengths = (oq - op, bq - bp)
        return skew
    }

    /// The edge of `hull` (at least two vertices) that spans local time `middle`, or the
    /// nearest end edge when none does.
    static func centreEdge(
        of hull: ContiguousArray<Int>, _ sorted: ContiguousArray<Entry>, _ frame: Frame, middle: Double,
        value: (Entry) -> Double
    ) -> Edge {
        var k = 0
        while k < hull.count - 2, frame.x(sorted[hull[k + 1]]) < middle { k += 1 }
        let p = sorted[hull[k]], q = sorted[hull[k + 1]]
        return ((value(q) - value(p)) / (frame.x(q) - frame.x(p)), hull[k], hull[k + 1])
    }

    /// The squared change of `edge`'s slope when the sample at `left` is left out of its hull
    /// (0 when too few points remain for an edge). `hull` is scratch.
    static func jackknife(
        _ edge: Edge, leaving left: Int, _ sorted: ContiguousArray<Entry>, _ frame: Frame, middle: Double,
        hull: inout ContiguousArray<Int>, value: (Entry) -> Double
    ) -> Double {
        LowerHull.build(of: sorted, value: value, excluding: left, into: &hull)
        guard hull.count >= 2 else { return 0 }
        let d = centreEdge(of: hull, sorted, frame, middle: middle, value: value).slope - edge.slope
        return d * d
    }

    /// The envelopes at a given skew: `min(a − s·x)` and `min(r + s·x)`.
    static func envelopes(_ sorted: ContiguousArray<Entry>, _ frame: Frame, slope: Double) -> (alpha: Double, rho: Double) {
        var alpha = Double.infinity
        var rho = Double.infinity
        for e in sorted {
            alpha = min(alpha, frame.a(e) - slope * frame.x(e))
            rho = min(rho, frame.r(e) + slope * frame.x(e))
        }
        return (alpha, rho)
    }

    /// How far above an envelope its third-best sample sits (`μ`): the envelope rests on one or
    /// two samples (residual 0), so this is the first or second gap, a scale for how far the
    /// envelope itself may sit above the truth. `residual` is a sample's height above the
    /// envelope (below it counts as 0). One pass keeping the three smallest, not a selection
    /// over a copy: a fit takes four of these after every sample, and its selections were a
    /// fifth of its `perf` samples in an idle agent at 8 hosts.
    static func scale(_ sorted: ContiguousArray<Entry>, residual: (Entry) -> Double) -> Double {
        var first = Double.infinity, second = Double.infinity, third = Double.infinity
        for e in sorted {
            let v = max(0, residual(e))
            guard v < third else { continue }
            if v < second {
                third = second
                if v < first {
                    second = first
                    first = v
                } else {
                    second = v
                }
            } else {
                third = v
            }
        }
        // The third smallest (or the largest, with fewer).
        switch sorted.count {
        case 0: return 0
        case 1: return first
        case 2: return second
        default: return third
        }
    }

    /// The skew is no better known than this share of the two directions' disagreement
    /// (``EdgeSkew/directions``): a minimum delay that crept up or down in one direction over the
    /// window (a queue, a softirq moving to a busier core: the lab's bridge does this by a few µs
    /// within a minute) biases the skew by half of it, which neither edge's jackknife nor least
    /// squares (biased alike) shows; with the bound's z·k = 9, a quarter covers that bias 4.5 times
    /// over, as ``combined(_:_:maxSkew:)`` covers the edges' disagreement with least squares.
    static let directionsShare = 4.0

    /// Margin on the least-squares slope's standard error: path delays drift (queues and
    /// scheduling change over seconds), so residuals of neighbouring samples are correlated and
    /// the textbook error is optimistic.
    static let lsSigmaInflation = 2.0

    /// A second view of the skew: the least-squares slope of the offsets `(a − r)/2` against `x`
    /// over the samples whose round trip is at most the window's median (chrony's regression,
    /// with the slower half left out instead of weighted down), and its standard error (inflated
    /// by ``lsSigmaInflation``: neighbouring samples' errors are not independent); nil with fewer
    /// than 8 such samples or no spread in time. `residuals` is scratch.
    static func leastSquaresSlope(
        _ sorted: ContiguousArray<Entry>, _ frame: Frame, noiseFloorNs: Double, residuals: inout ContiguousArray<Double>
    ) -> (slope: Double, sigma: Double)? {
        let n = sorted.count
        guard n >= 8 else { return nil }
        residuals.removeAll(keepingCapacity: true)
        for e in sorted { residuals.append(Double(e.delay)) }
        let median = Quickselect.select(&residuals, k: (n - 1) / 2)
        var count = 0.0, sx = 0.0, sy = 0.0
        for e in sorted where Double(e.delay) <= median {
            count += 1
            sx += frame.x(e)
            sy += frame.y(e)
        }
        guard count >= 8 else { return nil }
        let mx = sx / count, my = sy / count
        var sxx = 0.0, sxy = 0.0
        for e in sorted where Double(e.delay) <= median {
            let dx = frame.x(e) - mx
            sxx += dx * dx
            sxy += dx * (frame.y(e) - my)
        }
        guard sxx > 0 else { return nil }
        let slope = sxy / sxx
        var sse = 0.0
        for e in sorted where Double(e.delay) <= median {
            let d = frame.y(e) - my - slope * (frame.x(e) - mx)
            sse += d * d
        }
        let variance = max(sse / (count - 2), noiseFloorNs * noiseFloorNs)
        return (slope, lsSigmaInflation * (variance / sxx).squareRoot())
    }

    /// The edges' skew and least squares' combined by their variances, so that each link gets
    /// the better one; but where they disagree (path delays drifting over the window bias both,
    /// differently), the skew is no better known than a quarter of their disagreement (the bound
    /// multiplies the skew's scale by z·k = 9, and the truth is rarely beyond the two).
    /// `edges.sigma` must be positive.
    static func combined(_ edges: EdgeSkew, _ ls: (slope: Double, sigma: Double), maxSkew: Double) -> EdgeSkew {
        var skew = edges
        let wh = 1 / (edges.sigma * edges.sigma), wl = 1 / (ls.sigma * ls.sigma)
        let disagreement = (edges.slope - ls.slope).magnitude / 4
        skew.slope = min(max((wh * edges.slope + wl * ls.slope) / (wh + wl), -maxSkew), maxSkew)
        skew.sigma = max((1 / (wh + wl)).squareRoot(), disagreement)
        return skew
    }

    /// A short or noisy window says little about the skew: it is shrunk towards zero by a
    /// Gaussian prior of standard deviation `priorPPM`, as a ridge regression would, by
    /// `prior² / (prior² + σₛ²)` (its scale by the root of that).
    static func shrunk(_ skew: EdgeSkew, priorPPM: Double) -> EdgeSkew {
        var shrunk = skew
        let prior = priorPPM * 1e-6
        let w = prior * prior / (prior * prior + skew.sigma * skew.sigma)
        shrunk.slope *= w
        shrunk.sigma *= w.squareRoot()
        return shrunk
    }

    /// The hard bounds, which hold for any path asymmetry. On the slope: the best sample of each
    /// half of the window brackets the true offset within ±δ/2, so the true slope lies within
    /// the chord's range (else `maxSkew` plus the slope). At the reference: the best sample's
    /// bracket, carried along the line by that slope error and `wander` (ratios).
    static func hardBounds(
        _ sorted: ContiguousArray<Entry>, _ frame: Frame, offset: Double, slope: Double, maxSkew: Double, wander: Double
    ) -> (bound: Double, slopeError: Double) {
        var slopeError = maxSkew + slope.magnitude
        let middle = frame.x(sorted[0]) / 2
        var early: Entry?
        var late: Entry?
        for e in sorted {
            if frame.x(e) < middle {
                if e.delay < early?.delay ?? .max { early = e }
            } else if e.delay < late?.delay ?? .max {
                late = e
            }
        }
        if let early, let late, late.local > early.local {
            let span = Double(late.local &- early.local)
            let chord = (late.offset - early.offset) / span
            let halfWidth = Double(early.delay &+ late.delay) / 2 / span + wander
            slopeError = min(slopeError, max((slope - (chord - halfWidth)).magnitude, (chord + halfWidth - slope).magnitude))
        }
        var bound = Double.infinity
        for e in sorted {
            let line = offset + slope * frame.x(e)
            bound = min(bound, Double(e.delay) / 2 + (line - e.offset).magnitude + (slopeError + wander) * frame.x(e).magnitude)
        }
        return (bound, slopeError)
    }
}
