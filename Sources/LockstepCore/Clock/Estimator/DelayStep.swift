/// A sudden rise of the path's minimum round trip, kept as an alarm (review finding M6).
///
/// Two-way exchanges see the sum of the two directions' delays, never their split. If one
/// direction gets slower by `d` (an on-path attacker holding its packets, or a route change) the
/// offset seen through the path moves by `d/2`, and nothing on the link shows which: a rise of
/// the round trip by `R` moves the offset by anything up to `R/2` either way. The statistical
/// bound assumes equal minimum delays each way, so it would not cover that move: once the
/// faster samples have left the window, the estimate sits up to `R/2` off with a bound of a few
/// µs. Chrony caps the delay it accepts (`maxdelay`, `maxdelayratio`, `maxdelaydevratio`); here
/// only an absolute cap is kept (``ClockEstimator/Configuration/maxDelay``), and a slower path
/// is accepted (it may be a real route change, and refusing it for good would stop the clock),
/// but not trusted: ``SampleGate`` records the rise, and until the path is back the statistical
/// bound is widened by ``bias``. (Capping how far one sample may move the offset would not help:
/// the attacker holds the delay as long as he likes, and a capped estimate would slew to the same
/// place.)
///
/// **The window restarts** from the slower path's samples, as after a clock step. Both paths in
/// one window would bias the skew: each direction's hull edge climbs from one path to the other
/// (in simulation, a 5 ms one-way step gave 96 ppm of skew error and 4.1 ms of offset error, more
/// than the step explains). The faster path is kept as an ``anchor``: the fit just before.
///
/// **Explaining it.** The fits on the slower path are compared with the anchor's line, each with
/// its statistical scale: the offset moved by the difference. A rise shared by both directions
/// moves nothing, and its allowance shrinks to the comparison's precision; a one-sided rise shows
/// as half of it, and keeps the allowance. The alarm (``ClockEstimate/delayStep``) is shown
/// until the rise is ``explained``: the last comparison found no move, and was precise enough to
/// have seen a quarter of a one-sided one. An explained rise keeps its (small) allowance in the
/// bound, but no longer alarms.
///
/// **Ending it.** The record goes when the path is back (a sample near the old minimum: nothing
/// left to explain; the window then restarts again, for the same reason) or when the estimator is
/// reset. Not with time: the link holds no evidence either way, and an attacker who waits must
/// not win by waiting.
///
/// **Limits.** A rise below the delay step's bar (the window's mean excess, at least
/// ``ClockEstimator/Configuration/minDelayGate``) is not seen, and may move the offset by half
/// of it; so may a rise slower than the window turns over (a ramp). Only other paths can show
/// those (``MeshClock``).
struct DelayStep: Sendable, Equatable {
    /// The minimum round trip before the rise (the trusted path's envelopes, rounded down: the
    /// best single sample may sit above them), ns.
    var before: Int64
    /// The smallest round trip seen since, ns.
    var after: Int64
    /// Excess over the minimum that counted as slow when the rise was seen, ns; a sample within
    /// it of ``before`` (and nearer to it than to ``after``) means the path is back.
    var threshold: Int64
    /// The fit on the faster path, just before the rise.
    var anchor: EnvelopeFit.Fit
    /// How far the rise may have moved the offset, as measured so far, ns (`R/2` until then).
    var allowance: Double
    /// The last comparison with the anchor found the rise shared by both directions.
    var explained = false

    /// A rise to `after` from a window fitted by `anchor`, in which `threshold` was slow.
    init(after: Int64, threshold: Int64, anchor: EnvelopeFit.Fit) {
        self.before = Int64(anchor.envelopeDelay.rounded(.down))
        self.after = after
        self.threshold = threshold
        self.anchor = anchor
        self.allowance = Self.halfRise(after &- before, slope: anchor.slope)
    }

    /// How far a rise of the round trip by `rise` may move the offset: half of it, on the peer's
    /// clock (the round trip is measured on the local one: they differ by the skew).
    static func halfRise(_ rise: Int64, slope: Double) -> Double {
        Double(rise) / 2 * (1 + slope.magnitude)
    }

    /// The rise of the minimum round trip, ns.
    var riseNs: Int64 { after &- before }

    /// The most the rise can have moved the offset, ns: half the rise, or less once measured.
    var bias: Double { min(allowance, Self.halfRise(riseNs, slope: anchor.slope)) }

    /// A further rise on top of this one (the path got slower again): the allowance grows by
    /// half of it.
    mutating func rose(to after: Int64) {
        allowance = bias + Self.halfRise(after &- self.after, slope: anchor.slope)
        explained = false
        self.after = after
    }

    /// A kept sample with round trip `delay`: false when it shows the path back at its old
    /// minimum (the record should go): within ``threshold`` of it, and nearer to it than to the
    /// slower path's (on a jittery path the threshold can exceed the rise, and the slower path's
    /// own samples must not end it).
    mutating func kept(delay: Int64) -> Bool {
        if delay <= before &+ min(threshold, riseNs / 2) { return false }
        after = min(after, delay)
        return true
    }

    /// Compares `fit`, on the slower path, with the anchor at `fit`'s newest sample: the offset
    /// moved by their difference, known within `z` times their combined statistical scales plus
    /// the anchor's wander since (``ClockEstimator/Configuration`` gives `z`, the edge growth and
    /// the wander).
    mutating func measure(_ fit: EnvelopeFit.Fit, configuration c: ClockEstimator.Configuration) {
        guard fit.statistical, anchor.statistical else { return }
        let t = fit.reference
        let shift = fit.offset(atLocal: t) - anchor.offset(atLocal: t)
        let sigma = fit.sigma(atLocal: t, edgeGrowth: c.edgeGrowth), sigmaAnchor = anchor.sigma(atLocal: t, edgeGrowth: c.edgeGrowth)
        let tolerance = c.boundSigmas * (sigma * sigma + sigmaAnchor * sigmaAnchor).squareRoot()
            + c.wanderPPM * 1e-6 * Double(max(0, t &- anchor.reference))
        allowance = min(allowance, shift.magnitude + tolerance)
        explained = shift.magnitude <= tolerance && tolerance < Double(riseNs) / 4
    }
}
