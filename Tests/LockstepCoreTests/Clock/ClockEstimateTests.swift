import Foundation
import LockstepCore
import Testing

@Suite("Clock samples and estimates")
struct ClockEstimateTests {
    // Peer 10 µs ahead, 100 ns each way, 50 ns turnaround.
    let sample = ClockSample(t1: 0, t2: 10_100, t3: 10_150, t4: 250)

    @Test("a sample's offset, delay and midpoint follow RFC 5905")
    func sampleArithmetic() {
        #expect(sample.offset == 10_000)
        #expect(sample.delay == 200)
        #expect(sample.midpointLocal == 125)
        #expect(sample.isValid)
    }

    @Test("a sample's arithmetic does not overflow far from zero")
    func sampleFarFromZero() {
        let base = Int64.max - 1_000_000
        let s = ClockSample(t1: base - 1_000, t2: -base, t3: -base + 50, t4: base - 750)
        #expect(s.isValid == false)  // the offset is ~2^64: no clock is that far away
        let near = ClockSample(t1: base - 1_000, t2: base - 30_000_000_000 + 100, t3: base - 30_000_000_000 + 150, t4: base - 750)
        #expect(near.isValid)
        #expect(near.offset == -30_000_000_000 + 1_000)
        #expect(near.delay == 200)
    }

    @Test("impossible samples are invalid: time backwards, negative delay, overflow")
    func invalidSamples() {
        #expect(ClockSample(t1: 100, t2: 5, t3: 6, t4: 50).isValid == false)  // t4 < t1
        #expect(ClockSample(t1: 0, t2: 10, t3: 5, t4: 50).isValid == false)  // t3 < t2
        #expect(ClockSample(t1: 0, t2: 10, t3: 100, t4: 50).isValid == false)  // turnaround > round trip
        #expect(ClockSample(t1: .min, t2: .max, t3: .max, t4: .min + 10).isValid == false)
    }

    private func estimate(offset: Double = 30e9, skewPPM: Double = 200, at ref: Int64 = 5_000_000_000) -> ClockEstimate {
        ClockEstimate(
            referenceLocal: ref, offsetNs: offset, skewPPM: skewPPM, errorBoundNs: 1_000, errorGrowthPPM: 2,
            hardBoundNs: 40_000, hardGrowthPPM: 100, delayNs: 80_000, sampleCount: 10
        )
    }

    @Test("peerTime and localTime are inverses within 1 ns, for any skew and offset")
    func conversionsInvert() {
        var rng = SeededRandom(seed: 42)
        for _ in 0..<10_000 {
            let e = estimate(
                offset: (rng.unit() - 0.5) * 60e9 + rng.unit(), skewPPM: (rng.unit() - 0.5) * 1000,
                at: Int64(rng.unit() * 1e15)
            )
            let t = e.referenceLocal + Int64((rng.unit() - 0.5) * 2e12)
            #expect((e.localTime(fromPeer: e.peerTime(fromLocal: t)) - t).magnitude <= 1)
            let p = e.peerTime(fromLocal: t) + Int64((rng.unit() - 0.5) * 1e9)
            #expect((e.peerTime(fromLocal: e.localTime(fromPeer: p)) - p).magnitude <= 1)
        }
    }

    @Test("offset and bounds move linearly away from the reference")
    func extrapolation() {
        let e = estimate()
        let later = e.referenceLocal + 1_000_000_000
        #expect(e.offset(atLocal: later) == 30e9 + 200_000)
        #expect(e.errorBound(atLocal: later) == 1_000 + 2_000)
        #expect(e.hardBound(atLocal: later) == 40_000 + 100_000)
        #expect(e.peerTime(fromLocal: later) == later + 30_000_200_000)
        let moved = e.rebased(toLocal: later)
        #expect(moved.offsetNs == e.offset(atLocal: later))
        #expect(moved.errorBoundNs == e.errorBound(atLocal: later))
        #expect(moved.peerTime(fromLocal: later + 7) == e.peerTime(fromLocal: later + 7))
    }

    @Test("an inverted estimate maps the peer's clock back, and inverting twice is the identity")
    func inversion() {
        let e = estimate()
        let inv = e.inverted()
        for t: Int64 in [0, 5_000_000_000, 987_654_321_000] {
            let p = e.peerTime(fromLocal: t)
            #expect((inv.peerTime(fromLocal: p) - t).magnitude <= 1)
        }
        let back = inv.inverted()
        #expect((back.offsetNs - e.offsetNs).magnitude < 1e-3)
        #expect((back.skewPPM - e.skewPPM).magnitude < 1e-9)
        #expect((back.referenceLocal - e.referenceLocal).magnitude <= 1)
    }

    @Test("composing A→B with B→C gives A→C: offsets add on the right clocks, rates multiply, bounds add")
    func composition() {
        // Three clocks over host time h: A = h, B = h + 5 s + 100 ppm·h, C = h − 2 s − 50 ppm·h.
        let a = DeviceClock.identity
        let b = DeviceClock(offsetNs: 5 * Nanos.second, skewPPM: 100)
        let c = DeviceClock(offsetNs: -2 * Nanos.second, skewPPM: -50)
        let h0: Int64 = 100 * Nanos.second
        func exact(_ from: DeviceClock, _ to: DeviceClock, atHost h: Int64) -> ClockEstimate {
            let rate = (1 + to.skewPPM * 1e-6) / (1 + from.skewPPM * 1e-6)
            return ClockEstimate(
                referenceLocal: from.device(fromHost: h), offsetNs: Double(to.device(fromHost: h) - from.device(fromHost: h)),
                skewPPM: (rate - 1) * 1e6, errorBoundNs: 1_000, errorGrowthPPM: 1, hardBoundNs: 10_000, delayNs: 50_000
            )
        }
        let ab = exact(a, b, atHost: h0)
        let bc = exact(b, c, atHost: h0 - 3 * Nanos.second)  // a report made 3 s earlier
        let h = h0 + 2 * Nanos.second
        let ac = ab.composed(with: bc, atLocal: a.device(fromHost: h))
        let truth = Double(c.device(fromHost: h) - a.device(fromHost: h))
        #expect((ac.offsetNs - truth).magnitude <= 2)
        #expect((ac.skewPPM - -50).magnitude < 1e-6)  // C against A: simply C's own rate
        // Bounds: 1 µs + 2 s × 1 ppm for A→B, 1 µs + ~5 s × 1 ppm for the stale B→C.
        #expect((ac.errorBoundNs - (1_000 + 2_000 + 1_000 + 5_000)).magnitude < 2)
        #expect(ac.hardBoundNs == 20_000)
        #expect(ac.delayNs == 100_000)
    }

    @Test("a delay step alarm is kept when rebased or inverted, adds up along a path, and is not part of the encoded form")
    func delayStepAlarm() throws {
        var e = estimate()
        #expect(e.delayStepNs == 0)
        e.delayStepNs = 5_000_000
        #expect(e.rebased(toLocal: e.referenceLocal + 1_000).delayStepNs == 5_000_000)
        #expect(e.inverted().delayStepNs == 5_000_000)
        #expect(e.composed(with: e, atLocal: e.referenceLocal).delayStepNs == 10_000_000)
        // The gossiped form (clock_report) carries no alarm: it describes the reporter's own link.
        let decoded = try JSONDecoder().decode(ClockEstimate.self, from: JSONEncoder().encode(e))
        #expect(decoded.delayStepNs == 0)
        #expect(decoded.offsetNs == e.offsetNs && decoded.errorBoundNs == e.errorBoundNs)
    }
}
