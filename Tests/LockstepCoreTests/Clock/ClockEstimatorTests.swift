import LockstepCore
import LockstepSimKit
import Testing

/// Direct tests of ``ClockEstimator``: samples in, verdicts and estimates out.
@Suite("Clock estimator")
struct ClockEstimatorTests {
    /// A sample at local time `t` against a peer `offset` ahead drifting at `skewPPM`, with
    /// one-way delays `out` and `back` and a 20 µs turnaround.
    static func sample(
        at t: Int64, offset: Int64 = 1_000_000, skewPPM: Double = 0, out: Int64 = 20_000, back: Int64 = 20_000
    ) -> ClockSample {
        let peer = DeviceClock(offsetNs: offset, skewPPM: skewPPM)
        return ClockSample(
            t1: LocalTime(ns: t), t2: PeerTime(ours: peer.device(fromHost: t + out)),
            t3: PeerTime(ours: peer.device(fromHost: t + out + 20_000)), t4: LocalTime(ns: t + out + 20_000 + back))
    }

    static let second = Nanos.second
    static let ms = Nanos.millisecond

    @Test("no estimate before the first sample")
    func nothingYet() {
        #expect(ClockEstimator().estimate(at: LocalTime(ns: 0)) == nil)
    }

    @Test("one sample is usable at once, with its own half-delay as the bound")
    func singleSample() {
        var est = ClockEstimator()
        #expect(est.onSample(Self.sample(at: 10 * Self.second)) == .accepted)
        let e = est.estimate(at: LocalTime(ns: 10 * Self.second))!
        #expect(e.offsetNs == 1_000_000)
        #expect(e.skewPPM == 0)
        #expect(e.sampleCount == 1)
        #expect(e.delay.ns == 40_000)
        #expect(e.errorBoundNs == e.hardBoundNs)
        #expect(e.hardBoundNs >= 20_000 && e.hardBoundNs < 21_000)
        // …and the bound widens with time (the skew is not known yet).
        #expect(e.errorBound(at: LocalTime(ns: 11 * Self.second)) > 500_000)
    }

    @Test("impossible timestamps are rejected and change nothing")
    func invalidSample() {
        var est = ClockEstimator()
        #expect(est.onSample(ClockSample(t1: LocalTime(ns: 100), t2: PeerTime(ns: 0), t3: PeerTime(ns: 0), t4: LocalTime(ns: 50))) == .rejectedInvalid)
        #expect(est.estimate(at: LocalTime(ns: 0)) == nil)
        #expect(est.sampleCount == 0)
    }

    @Test("offset and skew are exact on a clean path, and the bound is small")
    func cleanPath() {
        var est = ClockEstimator()
        for i in 0..<200 {
            _ = est.onSample(Self.sample(at: Int64(i) * 100 * Self.ms, offset: 30 * Self.second, skewPPM: 150))
        }
        let now = 20 * Self.second
        let e = est.estimate(at: LocalTime(ns: now))!
        let truth = Double(DeviceClock(offsetNs: 30 * Self.second, skewPPM: 150).device(fromHost: now).ns - now)
        #expect((e.offsetNs - truth).magnitude < 5)
        #expect((e.skewPPM - 150).magnitude < 0.001)
        #expect(e.errorBoundNs < 200)
        #expect(e.hardBoundNs >= 20_000)
    }

    @Test("a sample delayed far beyond the usual is rejected with its excess; the gate opens when the path changes")
    func delayGate() {
        var est = ClockEstimator()
        for i in 0..<50 { _ = est.onSample(Self.sample(at: Int64(i) * 100 * Self.ms)) }
        #expect(est.onSample(Self.sample(at: 5 * Self.second, out: 1_020_000)) == .rejectedDelay(excessNs: 1_000_000))
        #expect(est.sampleCount == 50)
        #expect(est.onSample(Self.sample(at: 5_100 * Self.ms)) == .accepted)
        // The path now takes 2 ms each way, for good: after 7 rejections in a row the gate opens.
        var verdicts: [ClockEstimator.SampleVerdict] = []
        for i in 0..<20 {
            verdicts.append(est.onSample(Self.sample(at: 6 * Self.second + Int64(i) * 100 * Self.ms, out: 2_000_000, back: 2_000_000)))
        }
        #expect(verdicts.prefix(7).allSatisfy { if case .rejectedDelay = $0 { true } else { false } })
        #expect(verdicts.dropFirst(7).allSatisfy { $0 == .accepted })
    }

    @Test("a clock step is confirmed by three agreeing outliers, then the window restarts")
    func clockStep() {
        var est = ClockEstimator()
        for i in 0..<100 { _ = est.onSample(Self.sample(at: Int64(i) * 100 * Self.ms)) }
        let t = 10 * Self.second
        let stepped = { (k: Int64) in Self.sample(at: t + k * 25 * Self.ms, offset: 1_000_000 + 10 * Self.ms) }
        guard case .rejectedOutlier(let r1) = est.onSample(stepped(0)) else { Issue.record("no outlier"); return }
        #expect((r1 - 10_000_000).magnitude < 1_000)
        guard case .rejectedOutlier = est.onSample(stepped(1)) else { Issue.record("no outlier"); return }
        guard case .clockStepped(let by) = est.onSample(stepped(2)) else { Issue.record("no step"); return }
        #expect((by - 10_000_000).magnitude < 1_000)
        #expect(est.sampleCount == 3)
        #expect((est.estimate(at: LocalTime(ns: t + 50 * Self.ms))!.offsetNs - 11_000_000).magnitude < 100)
    }

    @Test("a lone outlier is dropped and forgotten: no step")
    func loneOutlier() {
        var est = ClockEstimator()
        for i in 0..<100 { _ = est.onSample(Self.sample(at: Int64(i) * 100 * Self.ms)) }
        var t = 10 * Self.second
        for _ in 0..<5 {
            guard case .rejectedOutlier = est.onSample(Self.sample(at: t, offset: 5_000_000)) else {
                Issue.record("no outlier")
                return
            }
            #expect(est.onSample(Self.sample(at: t + 50 * Self.ms)) == .accepted)
            t += 100 * Self.ms
        }
        #expect((est.estimate(at: LocalTime(ns: t))!.offsetNs - 1_000_000).magnitude < 10)
    }

    @Test("the window is bounded by its capacity and by age")
    func bounded() {
        var est = ClockEstimator(configuration: .init(capacity: 64, maxSampleAge: .seconds(5)))
        for i in 0..<1_000 { _ = est.onSample(Self.sample(at: Int64(i) * 10 * Self.ms)) }
        #expect(est.sampleCount == 64)
        var slow = ClockEstimator(configuration: .init(capacity: 64, maxSampleAge: .seconds(5)))
        for i in 0..<100 { _ = slow.onSample(Self.sample(at: Int64(i) * Self.second)) }
        #expect(slow.sampleCount == 6)
    }

    @Test("reset forgets the peer's old epoch")
    func resetForgets() {
        var est = ClockEstimator()
        for i in 0..<10 { _ = est.onSample(Self.sample(at: Int64(i) * 100 * Self.ms)) }
        est.reset()
        #expect(est.estimate(at: LocalTime(ns: Self.second)) == nil)
        #expect(est.onSample(Self.sample(at: 2 * Self.second, offset: -7 * Self.second)) == .accepted)
        #expect(est.estimate(at: LocalTime(ns: 2 * Self.second))!.offsetNs == Double(-7 * Self.second))
    }

    @Test("a path asymmetry moves the offset by half of it; the hard bound still covers it")
    func asymmetry() {
        var est = ClockEstimator()
        for i in 0..<100 {
            _ = est.onSample(Self.sample(at: Int64(i) * 100 * Self.ms, out: 320_000, back: 20_000))
        }
        let e = est.estimate(at: LocalTime(ns: 10 * Self.second))!
        #expect((e.offsetNs - 1_150_000).magnitude < 10)
        #expect(e.errorBoundNs < 1_000)
        #expect(e.hardBoundNs >= 150_000)
    }

    // MARK: - Delay steps (review finding M6)

    /// Feeds `n` samples from `start`, every 100 ms, on a path of `out`/`back` ns each way plus
    /// `jitter` ns of uniform noise; returns the worst `|error| − bound` and the last estimate.
    static func feed(
        _ est: inout ClockEstimator, _ rng: inout SplitMix64, from start: Int64, count n: Int,
        out: Int64, back: Int64, jitter: Double = 3_000, verdicts: inout [ClockEstimator.SampleVerdict]
    ) -> (worst: Double, last: ClockEstimate) {
        let peer = DeviceClock(offsetNs: 1_000_000, skewPPM: 150)
        var worst = -Double.infinity
        for i in 0..<n {
            let t = start + Int64(i) * 100 * ms
            let s = sample(at: t, skewPPM: 150, out: out + Int64(rng.unit() * jitter), back: back + Int64(rng.unit() * jitter))
            verdicts.append(est.onSample(s))
            let e = est.estimate(at: s.t4)!
            let error = e.offset(at: s.t4) - Double(peer.device(fromHost: s.t4.ns).ns - s.t4.ns)
            worst = max(worst, error.magnitude - e.errorBound(at: s.t4))
        }
        return (worst, est.estimate(at: LocalTime(ns: start + Int64(n) * 100 * ms))!)
    }

    static func truth(at t: Int64) -> Double { Double(DeviceClock(offsetNs: 1_000_000, skewPPM: 150).device(fromHost: t).ns - t) }

    /// An estimator after 30 s of samples on a path of `delay` ns each way (see ``feed``).
    static func warmedUp(seed: UInt64, delay: Int64 = 20_000, jitter: Double = 3_000) -> (ClockEstimator, SplitMix64) {
        var est = ClockEstimator()
        var rng = SplitMix64(seed: seed)
        var verdicts: [ClockEstimator.SampleVerdict] = []
        let warm = feed(&est, &rng, from: 0, count: 300, out: delay, back: delay, jitter: jitter, verdicts: &verdicts)
        #expect(warm.worst <= 0 && warm.last.delayStep.ns == 0 && verdicts.allSatisfy { $0 == .accepted })
        return (est, rng)
    }

    @Test("one direction 5 ms slower: an alarm of 5 ms, the window restarts, the bound covers the 2.5 ms the offset moved")
    func oneWayDelayStep() {
        var (est, rng) = Self.warmedUp(seed: 1)
        var verdicts: [ClockEstimator.SampleVerdict] = []
        let after = Self.feed(&est, &rng, from: 30 * Self.second, count: 200, out: 5_020_000, back: 20_000, verdicts: &verdicts)
        // Seven rejected by the gate, which then opens; the 32nd is a delay step: the window
        // restarts from the newer 16.
        #expect(verdicts.prefix(7).allSatisfy { if case .rejectedDelay = $0 { true } else { false } })
        #expect(verdicts.dropFirst(7).allSatisfy { $0 == .accepted })
        #expect(est.sampleCount == 200 - 16)
        #expect(after.worst <= 0, "the bound covers the error after the step")
        #expect((after.last.delayStep.ns - 5_000_000).magnitude < 10_000)
        #expect((after.last.offsetNs - Self.truth(at: after.last.reference.ns) - 2_500_000).magnitude < 5_000)
        #expect(after.last.errorBoundNs < 2_520_000)
    }

    @Test("a delay step shared by both directions is explained: no alarm, the offset unmoved, the bound soon back to a few µs")
    func sharedDelayStep() {
        var (est, rng) = Self.warmedUp(seed: 2)
        var verdicts: [ClockEstimator.SampleVerdict] = []
        let early = Self.feed(&est, &rng, from: 30 * Self.second, count: 10, out: 2_520_000, back: 2_520_000, verdicts: &verdicts)
        #expect(early.worst <= 0)
        let after = Self.feed(&est, &rng, from: 31 * Self.second, count: 200, out: 2_520_000, back: 2_520_000, verdicts: &verdicts)
        #expect(after.worst <= 0)
        #expect(after.last.delayStep.ns == 0)
        #expect((after.last.offsetNs - Self.truth(at: after.last.reference.ns)).magnitude < 1_000)
        #expect(after.last.errorBoundNs < 5_000)
    }

    @Test("when the path is back the alarm ends, and the window restarts from the faster path")
    func delayStepOver() {
        var (est, rng) = Self.warmedUp(seed: 3)
        var verdicts: [ClockEstimator.SampleVerdict] = []
        let slow = Self.feed(&est, &rng, from: 30 * Self.second, count: 100, out: 5_020_000, back: 20_000, verdicts: &verdicts)
        #expect(slow.last.delayStep.ns > 0)
        let back = Self.feed(&est, &rng, from: 40 * Self.second, count: 100, out: 20_000, back: 20_000, verdicts: &verdicts)
        #expect(back.worst <= 0)
        #expect(back.last.delayStep.ns == 0)
        #expect(est.sampleCount == 100)
        #expect((back.last.offsetNs - Self.truth(at: back.last.reference.ns)).magnitude < 1_000)
    }

    @Test("on a jittery path a one-way step smaller than the gate is still a delay step, and the bound covers it")
    func jitteryDelayStep() {
        // 5 ms ± 1 ms each way: the gate is at about 16 ms.
        var (est, rng) = Self.warmedUp(seed: 4, delay: 4_000_000, jitter: 2_000_000)
        var verdicts: [ClockEstimator.SampleVerdict] = []
        let after = Self.feed(&est, &rng, from: 30 * Self.second, count: 200, out: 9_000_000, back: 4_000_000, jitter: 2_000_000, verdicts: &verdicts)
        #expect(verdicts.allSatisfy { $0 == .accepted })
        #expect(after.worst <= 0)
        #expect((after.last.delayStep.ns - 5_000_000).magnitude < 1_000_000)
    }
}
