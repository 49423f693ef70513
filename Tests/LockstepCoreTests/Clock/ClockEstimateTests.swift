import Foundation
import LockstepCore
import Testing

@Suite("Clock samples and estimates")
struct ClockEstimateTests {
    static func sample(_ t1: Int64, _ t2: Int64, _ t3: Int64, _ t4: Int64) -> ClockSample {
        ClockSample(t1: LocalTime(ns: t1), t2: PeerTime(ns: t2), t3: PeerTime(ns: t3), t4: LocalTime(ns: t4))
    }

    // Peer 10 µs ahead, 100 ns each way, 50 ns turnaround.
    let sample = Self.sample(0, 10_100, 10_150, 250)

    @Test("a sample's offset, delay and midpoint follow RFC 5905")
    func sampleArithmetic() {
        #expect(sample.offset == 10_000)
        #expect(sample.delay == 200)
        #expect(sample.midpointLocal == LocalTime(ns: 125))
        #expect(sample.isValid)
    }

    @Test("a sample's arithmetic does not overflow far from zero")
    func sampleFarFromZero() {
        let base = Int64.max - 1_000_000
        let s = Self.sample(base - 1_000, -base, -base + 50, base - 750)
        #expect(s.isValid == false)  // the offset is ~2^64: no clock is that far away
        let near = Self.sample(base - 1_000, base - 30_000_000_000 + 100, base - 30_000_000_000 + 150, base - 750)
        #expect(near.isValid)
        #expect(near.offset == -30_000_000_000 + 1_000)
        #expect(near.delay == 200)
    }

    @Test("impossible samples are invalid: time backwards, negative delay, overflow")
    func invalidSamples() {
        #expect(Self.sample(100, 5, 6, 50).isValid == false)  // t4 < t1
        #expect(Self.sample(0, 10, 5, 50).isValid == false)  // t3 < t2
        #expect(Self.sample(0, 10, 100, 50).isValid == false)  // turnaround > round trip
        #expect(Self.sample(.min, .max, .max, .min + 10).isValid == false)
    }

    private func estimate(offset: Double = 30e9, skewPPM: Double = 200, at ref: Int64 = 5_000_000_000) -> ClockEstimate {
        ClockEstimate(
            reference: LocalTime(ns: ref), offsetNs: offset, skewPPM: skewPPM, errorBoundNs: 1_000, errorGrowthPPM: 2,
            hardBoundNs: 40_000, hardGrowthPPM: 100, delay: .microseconds(80), sampleCount: 10
        )
    }

    @Test("peerTime and localTime are inverses within 1 ns, for any skew and offset")
    func conversionsInvert() {
        var rng = SplitMix64(seed: 42)
        func unit() -> Double { Double.random(in: 0..<1, using: &rng) }
        for _ in 0..<10_000 {
            let e = estimate(offset: (unit() - 0.5) * 60e9 + unit(), skewPPM: (unit() - 0.5) * 1000, at: Int64(unit() * 1e15))
            let t = e.reference + .nanoseconds(Int64((unit() - 0.5) * 2e12))
            #expect((e.localTime(at: e.peerTime(at: t)) - t).magnitude <= .nanoseconds(1))
            let p = e.peerTime(at: t) + .nanoseconds(Int64((unit() - 0.5) * 1e9))
            #expect((e.peerTime(at: e.localTime(at: p)) - p).magnitude <= .nanoseconds(1))
        }
    }

    @Test("conversions saturate instead of trapping, whatever the estimate and the time")
    func conversionsSaturate() {
        let wild = ClockEstimate(
            reference: LocalTime(ns: Limits.instantNs.lowerBound), offsetNs: Limits.reportOffsetNs, skewPPM: Limits.reportSkewPPM.upperBound,
            errorBoundNs: 1e12, errorGrowthPPM: 1e6, hardBoundNs: 1e12, hardGrowthPPM: 1e6, delay: .seconds(10))
        let t = LocalTime(ns: Limits.instantNs.upperBound)
        #expect(wild.peerTime(at: .distantFuture) == .distantFuture)
        #expect(wild.localTime(at: .distantPast) == .distantPast)
        #expect(wild.errorBoundSpan(at: t) > .zero)
        #expect(wild.peerTime(at: t).ns > t.ns)
    }

    @Test("offset and bounds move linearly away from the reference")
    func extrapolation() {
        let e = estimate()
        let later = e.reference + .seconds(1)
        #expect(e.offset(at: later) == 30e9 + 200_000)
        #expect(e.errorBound(at: later) == 1_000 + 2_000)
        #expect(e.hardBound(at: later) == 40_000 + 100_000)
        #expect(e.peerTime(at: later) == PeerTime(ns: later.ns + 30_000_200_000))
        let moved = e.rebased(to: later)
        #expect(moved.offsetNs == e.offset(at: later))
        #expect(moved.errorBoundNs == e.errorBound(at: later))
        #expect(moved.peerTime(at: later + .nanoseconds(7)) == e.peerTime(at: later + .nanoseconds(7)))
    }

    @Test("composing A→B with B→C gives A→C: offsets add on the right clocks, rates multiply, hard bounds add, statistical bounds add as independent errors")
    func composition() {
        // Three clocks over host time h: A = h, B = h + 5 s + 100 ppm·h, C = h − 2 s − 50 ppm·h.
        let a = DeviceClock.identity
        let b = DeviceClock(offsetNs: 5 * Nanos.second, skewPPM: 100)
        let c = DeviceClock(offsetNs: -2 * Nanos.second, skewPPM: -50)
        let h0: Int64 = 100 * Nanos.second
        func exact(_ from: DeviceClock, _ to: DeviceClock, atHost h: Int64) -> ClockEstimate {
            let rate = (1 + to.skewPPM * 1e-6) / (1 + from.skewPPM * 1e-6)
            return ClockEstimate(
                reference: from.device(fromHost: h), offsetNs: Double(to.device(fromHost: h).ns - from.device(fromHost: h).ns),
                skewPPM: (rate - 1) * 1e6, errorBoundNs: 1_000, errorGrowthPPM: 1, hardBoundNs: 10_000, delay: .microseconds(50)
            )
        }
        let ab = exact(a, b, atHost: h0)
        // A report made 3 s earlier, as B sends it: on B's clock.
        let bc = ReportedEstimate(reporting: exact(b, c, atHost: h0 - 3 * Nanos.second))
        let h = h0 + 2 * Nanos.second
        let ac = ab.composed(with: bc, at: a.device(fromHost: h))
        let truth = Double(c.device(fromHost: h).ns - a.device(fromHost: h).ns)
        #expect((ac.offsetNs - truth).magnitude <= 2)
        #expect((ac.skewPPM - -50).magnitude < 1e-6)  // C against A: simply C's own rate
        // Bounds: 1 µs + 2 s × 1 ppm for A→B, 1 µs + ~5 s × 1 ppm for the stale B→C.
        #expect((ac.errorBoundNs - (3_000.0 * 3_000 + 6_000 * 6_000).squareRoot()).magnitude < 2)
        let growth: Double = 1 + (1 + 100e-6)
        #expect((ac.errorGrowthPPM - growth).magnitude < 1e-9, "growth rates add, the report's on B's clock")
        #expect(ac.hardBoundNs == 20_000)
        #expect(ac.delay == .microseconds(100))
    }

    @Test("a delay step alarm is kept when rebased, adds up along a path, and is not part of the encoded form")
    func delayStepAlarm() throws {
        var e = estimate()
        #expect(e.delayStep == .zero)
        e.delayStep = .milliseconds(5)
        #expect(e.rebased(to: e.reference + .microseconds(1)).delayStep == .milliseconds(5))
        var reported = ReportedEstimate(reporting: e)
        reported.delayStep = .milliseconds(5)
        let t = e.reference, tB = e.peerTime(at: t)
        let composed = e.composed(with: reported, at: t)
        #expect(composed.delayStep == .milliseconds(10))
        #expect(composed.errorBoundNs == e.errorBound(at: t) + reported.errorBound(at: tB), "with an alarm the statistical bounds add: a step's bias is not noise")
        let quiet = ReportedEstimate(reporting: estimate())
        #expect(e.composed(with: quiet, at: t).errorBoundNs == e.errorBound(at: t) + quiet.errorBound(at: tB), "an alarm on either link")
        #expect(estimate().composed(with: quiet, at: t).errorBoundNs < estimate().errorBound(at: t) + quiet.errorBound(at: tB), "without one they combine as independent errors")
        // The gossiped form (clock_report) carries no alarm: it describes the reporter's own link.
        let decoded = try JSONDecoder().decode(ClockEstimate.self, from: JSONEncoder().encode(e))
        #expect(decoded.delayStep == .zero)
        #expect(decoded.offsetNs == e.offsetNs && decoded.errorBoundNs == e.errorBoundNs)
    }
}
