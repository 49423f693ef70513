@testable import LockstepCore
import LockstepSimKit
import Testing

/// ``EnvelopeFit`` alone: the whole fit on synthetic samples whose truth is known exactly, and
/// its steps one by one.
@Suite("Envelope fit")
struct EnvelopeFitTests {
    typealias Entry = SampleWindow.Entry

    /// Noiseless exchanges every 100 ms against a peer `offset` ahead running 100 ppm fast
    /// (`peer = local + offset + local / 10⁴`, exact in integers; `skewed: false`, not at all),
    /// one-way delays `out(i)` and `back(i)`, a 10 µs turnaround.
    static func samples(
        _ n: Int, offset: Int64 = 3_000_000, skewed: Bool = true,
        out: (Int) -> Int64 = { _ in 20_000 }, back: (Int) -> Int64 = { _ in 20_000 }
    ) -> ContiguousArray<Entry> {
        let peer = { (t: Int64) in t + offset + (skewed ? t / 10_000 : 0) }
        return ContiguousArray((0..<n).map { i in
            let t1 = 1_000_000_000 + Int64(i) * 100_000_000
            let arrive = t1 + out(i)
            let reply = arrive + 10_000
            return Entry(ClockSample(t1: t1, t2: peer(arrive), t3: peer(reply), t4: reply + back(i)))
        })
    }

    static func fit(_ s: ContiguousArray<Entry>, _ configuration: ClockEstimator.Configuration = .init()) -> EnvelopeFit.Fit {
        var scratch = EnvelopeFit.Scratch(capacity: s.count)
        return EnvelopeFit.fit(s, configuration: configuration, scratch: &scratch)!
    }

    /// The true offset at local time `t` (as a real number: the integer peer clock rounds down).
    static func truth(_ t: Int64, offset: Int64 = 3_000_000) -> Double { Double(offset) + Double(t) / 10_000 }

    @Test("on noiseless samples with equal delays each way the fit recovers offset and skew exactly")
    func noiseless() {
        let s = Self.samples(200)
        let fit = Self.fit(s)
        #expect((fit.slope - 1e-4).magnitude < 1e-12)
        for t in [s[0].local, s[100].local, fit.reference, fit.reference + 1_000_000_000] {
            #expect((fit.offset(atLocal: t) - Self.truth(t)).magnitude < 0.01)
        }
        // Nothing to doubt: the offset's scale is the floor's, the skew's next to nothing.
        #expect(fit.sigmaOffset == 10 && fit.sigmaSlope < 1e-12)
        // (The peer's 10 µs turnaround takes 10.001 µs on its fast clock.)
        #expect(fit.minDelay == 39_999 && fit.count == 200 && fit.statistical)
        // The hard bound is the best bracket: half the round trip.
        #expect((fit.hardBound - 19_999.5).magnitude < 0.01)
    }

    @Test("a direction slowed on most samples is still pinned by its fastest ones, each direction on its own")
    func perDirectionMinimum() {
        var rng = SplitMix64(seed: 5)
        let extraOut = (0..<300).map { i in i % 50 == 7 ? 0 : Int64(rng.unit() * 2_000_000) }
        let extraBack = (0..<300).map { i in i % 60 == 31 ? 0 : Int64(rng.unit() * 2_000_000) }
        // No exchange is fast both ways, so no joint-minimum sample exists.
        #expect(zip(extraOut, extraBack).allSatisfy { $0 > 0 || $1 > 0 })
        // (No skew: a slowed request moves the reply's reading away from the midpoint, and with a
        // skew that would be an error of its own.)
        let s = Self.samples(300, skewed: false, out: { 20_000 + extraOut[$0] }, back: { 20_000 + extraBack[$0] })
        let fit = Self.fit(s)
        #expect(fit.slope == 0)
        #expect(fit.offset(atLocal: fit.reference) == 3_000_000)
        // Its statistical scale is the floor's, though no sample is within 1 µs of the offset.
        #expect(fit.sigmaOffset == 10)
        #expect(s.allSatisfy { ($0.offset - 3_000_000).magnitude > 1_000 })
    }

    @Test("an asymmetric path moves the offset by half the asymmetry, and only the hard bound covers it")
    func asymmetric() {
        let fit = Self.fit(Self.samples(100, out: { _ in 320_000 }))
        // (Plus 15 ns: the peer's readings are 150 µs after the midpoint, on a clock 100 ppm fast.)
        #expect((fit.offset(atLocal: fit.reference) - Self.truth(fit.reference) - 150_015).magnitude < 1)
        #expect(fit.hardBound >= 150_000)
        #expect(fit.sigmaOffset < 1_000)
    }

    @Test("one sample: no skew, its own half round trip as the hard bound, not yet statistical")
    func oneSample() {
        let fit = Self.fit(Self.samples(1))
        #expect(fit.slope == 0 && fit.count == 1 && !fit.statistical)
        #expect(fit.hardBound == 19_999.5)
        var scratch = EnvelopeFit.Scratch(capacity: 1)
        #expect(EnvelopeFit.fit([], configuration: .init(), scratch: &scratch) == nil)
    }

    // MARK: - Steps

    @Test("the centre edge is the hull edge over the middle time, or the nearest end edge")
    func centreEdge() {
        // Hull vertices at x = 0, 1, 3, 4 (as in the lower hull's test), relative to x = 4.
        let s = ContiguousArray([(0, 4), (1, 1), (2, 3), (3, 0), (4, 5)].map { Entry(local: $0.0, out: $0.1, back: 0) })
        let frame = EnvelopeFit.Frame(s[4])
        let hull: ContiguousArray<Int> = [0, 1, 3, 4]
        let middle = { (x: Int64) in Double(x - 4) }
        #expect(EnvelopeFit.centreEdge(of: hull, s, frame, middle: middle(2)) { frame.a($0) } == (-0.5, 1, 3))
        #expect(EnvelopeFit.centreEdge(of: hull, s, frame, middle: middle(0)) { frame.a($0) } == (-3, 0, 1))
        #expect(EnvelopeFit.centreEdge(of: hull, s, frame, middle: middle(9)) { frame.a($0) } == (5, 3, 4))
    }

    @Test("the jackknife leaves a line's edge as it is, and moves an edge that rests on one lucky sample")
    func jackknife() {
        var hull = ContiguousArray<Int>()
        var edges = ContiguousArray<Int>()
        let line = Self.samples(20)
        let f = EnvelopeFit.Frame(line[19])
        LowerHull.build(of: line, value: { f.a($0) }, into: &edges)
        #expect(Array(edges) == [0, 19])
        let e = EnvelopeFit.centreEdge(of: edges, line, f, middle: -1e9) { f.a($0) }
        #expect(EnvelopeFit.jackknife(e, leaving: 0, line, f, middle: -1e9, hull: &hull) { f.a($0) } < 1e-24)
        // Sample 10 arrived 1 µs faster than the others: the edges rest on it.
        let lucky = Self.samples(20, out: { $0 == 10 ? 19_000 : 20_000 })
        let g = EnvelopeFit.Frame(lucky[19])
        LowerHull.build(of: lucky, value: { g.a($0) }, into: &edges)
        #expect(Array(edges) == [0, 10, 19])
        let middle = g.x(lucky[10]) + 1
        let edge = EnvelopeFit.centreEdge(of: edges, lucky, g, middle: middle) { g.a($0) }
        #expect(edge.p == 10 && edge.q == 19)
        // Without it the edge is the line again: about 1 µs over 0.9 s, squared.
        let moved = EnvelopeFit.jackknife(edge, leaving: 10, lucky, g, middle: middle, hull: &hull) { g.a($0) }
        #expect(moved > 1e-12 && moved < 2e-12)
    }

    @Test("the envelopes are the lowest a − s·x and r + s·x")
    func envelopes() {
        let s: ContiguousArray<Entry> = [Entry(local: 0, out: 10, back: 7), Entry(local: 10, out: 5, back: 9), Entry(local: 20, out: 8, back: 8)]
        let frame = EnvelopeFit.Frame(s[2])
        // Relative to the newest: a = [2, −3, 0], r = [−1, 1, 0], x = [−20, −10, 0].
        #expect(EnvelopeFit.envelopes(s, frame, slope: 0) == (-3, -1))
        #expect(EnvelopeFit.envelopes(s, frame, slope: 0.5) == (0, -11))
    }

    @Test("the scale is the third-smallest residual, or the largest of fewer, negatives counting as 0")
    func scale() {
        let s = ContiguousArray((0..<6).map { Entry(local: Int64($0), out: [9, -2, 0, 4, 7, 3][$0], back: 0) })
        #expect(EnvelopeFit.scale(s) { Double($0.out) } == 3)
        #expect(EnvelopeFit.scale(ContiguousArray(s.prefix(2))) { Double($0.out) } == 9)
        #expect(EnvelopeFit.scale(ContiguousArray(s.prefix(1))) { Double($0.out) } == 9)
        #expect(EnvelopeFit.scale([]) { Double($0.out) } == 0)
    }

    @Test("the scale is what sorting the residuals gives, ties and repeats included")
    func scaleMatchesSorting() {
        var rng = SplitMix64(seed: 7)
        for _ in 0..<500 {
            let n = Int(rng.next() % 12)
            // Few distinct values, so that ties are common.
            let outs = (0..<n).map { _ in Int64(rng.next() % 7) - 2 }
            let s = ContiguousArray(outs.enumerated().map { Entry(local: Int64($0.offset), out: $0.element, back: 0) })
            let sorted = outs.map { max(0, Double($0)) }.sorted()
            let expected = sorted.isEmpty ? 0 : sorted[min(3, sorted.count) - 1]
            #expect(EnvelopeFit.scale(s) { Double($0.out) } == expected, "residuals \(outs)")
        }
    }

    @Test("least squares: the offsets' line over the faster half, nil with fewer than 8 samples")
    func leastSquares() {
        var residuals = ContiguousArray<Double>()
        let s = Self.samples(40, out: { $0 % 2 == 0 ? 20_000 : 2_000_000 })
        let frame = EnvelopeFit.Frame(s[39])
        let ls = EnvelopeFit.leastSquaresSlope(s, frame, noiseFloorNs: 10, residuals: &residuals)!
        #expect((ls.slope - 1e-4).magnitude < 1e-12)
        // The 20 fast samples, 0.2 s apart, spread Σdx² = 26.6 s²; the floor (10 ns) sets the
        // variance of a perfect line, and the error is inflated by 2.
        #expect((ls.sigma - 2 * (100 / 26.6e18).squareRoot()).magnitude < 1e-13)
        #expect(EnvelopeFit.leastSquaresSlope(ContiguousArray(s.prefix(7)), frame, noiseFloorNs: 10, residuals: &residuals) == nil)
    }

    @Test("combining weighs the two slopes by their variances, and keeps a quarter of their disagreement as the scale")
    func combined() {
        let edges = EnvelopeFit.EdgeSkew(slope: 4e-6, sigma: 1e-6, support: 0, edgeLengths: (1, 1))
        let c = EnvelopeFit.combined(edges, (slope: 0, sigma: 1e-6), maxSkew: 1e-3)
        #expect((c.slope - 2e-6).magnitude < 1e-18)
        #expect(c.sigma == 1e-6)  // max(√½ µ, 4 µ / 4)
        #expect(EnvelopeFit.combined(edges, (slope: 4e-6, sigma: 1e-6), maxSkew: 1e-3).sigma == (0.5e-12).squareRoot())
        #expect(EnvelopeFit.combined(edges, (slope: 1, sigma: 1e-9), maxSkew: 1e-3).slope == 1e-3)
    }

    @Test("the prior shrinks an uncertain skew towards zero and leaves a certain one alone")
    func prior() {
        let uncertain = EnvelopeFit.shrunk(.init(slope: 100e-6, sigma: 300e-6, support: 0), priorPPM: 300)
        #expect((uncertain.slope - 50e-6).magnitude < 1e-15)
        #expect((uncertain.sigma - 300e-6 * 0.5.squareRoot()).magnitude < 1e-15)
        let certain = EnvelopeFit.shrunk(.init(slope: 100e-6, sigma: 0, support: 0), priorPPM: 300)
        #expect(certain.slope == 100e-6 && certain.sigma == 0)
    }

    @Test("hard bounds: the best bracket carried along the line, and the slope error the brackets allow")
    func hardBounds() {
        let s = Self.samples(11)
        let frame = EnvelopeFit.Frame(s[10])
        let truth = Self.truth(s[10].local)
        let exact = EnvelopeFit.hardBounds(s, frame, offset: truth, slope: 1e-4, maxSkew: 1e-3, wander: 0)
        // The best brackets of each half (the first of each) are 40 µs wide and half a second
        // apart: the slope is known within 80 ppm.
        #expect((exact.slopeError - 79.998e-6).magnitude < 1e-12)
        #expect((exact.bound - 19_999.5).magnitude < 0.01)
        // A line 5 µs off at the reference is 5 µs further from the newest bracket.
        let off = EnvelopeFit.hardBounds(s, frame, offset: truth + 5_000, slope: 1e-4, maxSkew: 1e-3, wander: 0)
        #expect((off.bound - 24_999.5).magnitude < 0.01)
        let one = EnvelopeFit.hardBounds(ContiguousArray(s.prefix(1)), EnvelopeFit.Frame(s[0]), offset: s[0].offset, slope: 0, maxSkew: 1e-3, wander: 0)
        #expect(one == (19_999.5, 1e-3))
    }
}
