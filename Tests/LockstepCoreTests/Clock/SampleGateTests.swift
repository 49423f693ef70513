@testable import LockstepCore
import Testing

/// ``SampleGate`` alone: its verdicts against a fit given by hand (no hull is fitted).
@Suite("Sample gate")
struct SampleGateTests {
    /// A sample at local time `t` from a peer `offset` ahead, one-way delays `out` and `back`.
    static func sample(at t: Int64, offset: Int64 = 0, out: Int64 = 20_000, back: Int64 = 20_000) -> ClockSample {
        ClockSample(t1: t, t2: t + offset + out, t3: t + offset + out + 10_000, t4: t + out + 10_000 + back)
    }

    /// A line at `offset`, no skew, a hard bound of `hard`, the window's minimum round trip `minDelay`.
    static func fit(offset: Double = 0, hard: Double = 20_000, minDelay: Int64 = 40_000) -> EnvelopeFit.Fit {
        EnvelopeFit.Fit(
            reference: 0, offset: offset, slope: 0, support: 0, sigmaOffset: 10, sigmaSlope: 0, hardBound: hard,
            hardSlopeError: 0, minDelay: minDelay, envelopeDelay: Double(minDelay), count: 10, statistical: true)
    }

    /// A window of `n` samples with round trips `delay`.
    static func window(_ n: Int = 10, delay: Int64 = 40_000) -> SampleWindow {
        var w = SampleWindow(capacity: 64, maxAgeNs: .max)
        for i in 0..<n { w.append(SampleWindow.Entry(local: Int64(i) * 1_000_000, out: delay / 2, back: delay / 2)) }
        return w
    }

    static let slow = sample(at: 100_000_000, out: 1_020_000)

    @Test("impossible timestamps are rejected first")
    func invalid() {
        var gate = SampleGate(configuration: .init())
        #expect(gate.judge(ClockSample(t1: 100, t2: 0, t3: 0, t4: 50), against: Self.fit(), window: Self.window()) == .reject(.rejectedInvalid))
        #expect(gate.judge(ClockSample(t1: 100, t2: 0, t3: 0, t4: 50), against: nil, window: Self.window(0)) == .reject(.rejectedInvalid))
    }

    @Test("a sample slower than the gate is rejected with its excess; one within it is kept")
    func slowSample() {
        var gate = SampleGate(configuration: .init())
        #expect(gate.judge(Self.slow, against: Self.fit(), window: Self.window()) == .reject(.rejectedDelay(excessNs: 1_000_000)))
        // 40 µs of excess: under the 50 µs floor of the gate.
        #expect(gate.judge(Self.sample(at: 0, out: 60_000), against: Self.fit(), window: Self.window()) == .keep)
    }

    @Test("the gate is the window's mean excess times the factor, at least its floor")
    func gateScales() {
        let gate = SampleGate(configuration: .init(delayGateFactor: 8, minDelayGate: .microseconds(50)))
        #expect(gate.delayGate(minDelay: 40_000, window: Self.window()) == 50_000)
        var w = Self.window(5)
        for i in 0..<5 { w.append(SampleWindow.Entry(local: Int64(10 + i), out: 30_000, back: 30_000)) }
        // Mean excess 10 µs: the gate is 80 µs.
        #expect(gate.delayGate(minDelay: 40_000, window: w) == 80_000)
        var judged = SampleGate(configuration: .init())
        #expect(judged.judge(Self.sample(at: 0, out: 90_000), against: Self.fit(), window: w) == .keep)
        #expect(judged.judge(Self.sample(at: 0, out: 120_000), against: Self.fit(), window: w) == .reject(.rejectedDelay(excessNs: 100_000)))
    }

    /// (Delay steps are set out of the way.)
    @Test("after seven rejections in a row the gate opens, and stays open until a sample passes it on its own")
    func reopens() {
        var gate = SampleGate(configuration: .init(maxConsecutiveDelayRejections: 8, delayStepFactor: 100))
        let fit = Self.fit()
        var window = Self.window(5)
        for i in 0..<5 { window.append(SampleWindow.Entry(local: Int64(10 + i), out: 30_000, back: 30_000)) }
        // Mean excess 10 µs: the gate is at 80 µs, a delay step at 1 ms; this sample is 500 µs slow.
        let slow = Self.sample(at: 0, out: 520_000)
        let verdicts = (0..<10).map { _ in gate.judge(slow, against: fit, window: window) }
        #expect(verdicts.prefix(7).allSatisfy { $0 == .reject(.rejectedDelay(excessNs: 500_000)) })
        #expect(verdicts.dropFirst(7).allSatisfy { $0 == .keep })
        // A fast sample closes it again.
        #expect(gate.judge(Self.sample(at: 0), against: fit, window: window) == .keep)
        #expect(gate.judge(slow, against: fit, window: window) == .reject(.rejectedDelay(excessNs: 500_000)))
        #expect(gate.delayStep == nil)
    }

    @Test("before the window holds two samples, only validity is judged")
    func tooFewToJudge() {
        var gate = SampleGate(configuration: .init())
        #expect(gate.judge(Self.slow, against: Self.fit(), window: Self.window(1)) == .keep)
        #expect(gate.judge(Self.sample(at: 0, offset: 1_000_000_000), against: nil, window: Self.window(0)) == .keep)
    }

    @Test("a sample beyond the hard bound plus the threshold is held as an outlier; three that agree make a step")
    func stepConfirmed() {
        var gate = SampleGate(configuration: .init(stepThresholdNs: 100_000, stepConfirmations: 3))
        let (fit, window) = (Self.fit(), Self.window())
        // 20 µs of half-delay + 20 µs of hard bound + 100 µs: 1 ms is far beyond.
        let stepped = { (k: Int64) in Self.sample(at: k * 25_000_000, offset: 1_000_000) }
        #expect(gate.judge(stepped(0), against: fit, window: window) == .reject(.rejectedOutlier(residualNs: 1_000_000)))
        #expect(gate.judge(stepped(1), against: fit, window: window) == .reject(.rejectedOutlier(residualNs: 1_000_000)))
        #expect(gate.judge(stepped(2), against: fit, window: window) == .step(byNs: 1_000_000))
        #expect(gate.held == [stepped(0), stepped(1), stepped(2)])
        gate.reset()
        #expect(gate.held.isEmpty)
    }

    @Test("a sample just inside the hard bound plus the threshold is no outlier")
    func withinThreshold() {
        var gate = SampleGate(configuration: .init(stepThresholdNs: 100_000))
        #expect(gate.judge(Self.sample(at: 0, offset: 139_000), against: Self.fit(), window: Self.window()) == .keep)
        #expect(gate.judge(Self.sample(at: 0, offset: 141_000), against: Self.fit(), window: Self.window()) != .keep)
    }

    @Test("outliers that disagree with each other make no step, and a kept sample forgets them")
    func noStep() {
        var gate = SampleGate(configuration: .init(stepConfirmations: 3))
        let (fit, window) = (Self.fit(), Self.window())
        for (k, offset): (Int64, Int64) in [(0, 1_000_000), (1, 5_000_000), (2, 1_000_000)] {
            guard case .reject(.rejectedOutlier) = gate.judge(Self.sample(at: k, offset: offset), against: fit, window: window) else {
                Issue.record("not held as an outlier")
                return
            }
        }
        #expect(gate.held.count == 3)
        #expect(gate.judge(Self.sample(at: 3), against: fit, window: window) == .keep)
        #expect(gate.held.isEmpty)
    }

    // MARK: - Delay steps (review finding M6)

    @Test("a sample slower than the cap is never kept, however many come")
    func cap() {
        var gate = SampleGate(configuration: .init(maxDelay: .microseconds(500)))
        let (fit, window) = (Self.fit(), Self.window())
        for _ in 0..<20 { #expect(gate.judge(Self.slow, against: fit, window: window) == .reject(.rejectedDelay(excessNs: 1_000_000))) }
        #expect(gate.delayStep == nil)
        #expect(gate.judge(Self.slow, against: nil, window: Self.window(0)) == .reject(.rejectedDelay(excessNs: 1_040_000)))
    }

    @Test("a run of samples slower than the delay step's bar is a delay step, though the gate lets each in: the window restarts from them")
    func stepUnderTheGate() {
        var gate = SampleGate(configuration: .init(delayGateFactor: 8, minDelayGate: .microseconds(50), delayStepSamples: 8, delayStepFactor: 2))
        var w = Self.window(10)
        for i in 0..<10 { w.append(SampleWindow.Entry(local: Int64(20 + i), out: 50_000, back: 50_000)) }
        // Mean excess 30 µs: the gate is at 240 µs, a step at 60 µs. This path is 100 µs slower.
        let slower = { (k: Int64) in Self.sample(at: k * 100_000_000, out: 70_000, back: 70_000) }
        for k: Int64 in 0..<7 { #expect(gate.judge(slower(k), against: Self.fit(), window: w) == .keep) }
        #expect(gate.delayStep == nil)
        #expect(gate.judge(slower(7), against: Self.fit(), window: w) == .restart)
        // The newer half: the first of a run may be the old path's slowest.
        #expect(gate.slowRun == ContiguousArray((4..<8).map(slower)))
        #expect(gate.delayStep?.before == 40_000)
        #expect(gate.delayStep?.after == 140_000)
        gate.windowRestarted()
        #expect(gate.slowRun.isEmpty && gate.delayStep != nil)
    }

    @Test("a rise the gate rejects: the gate opens after seven, the 32nd is a delay step, and the window restarts from the newer 16, rejected or not")
    func stepOverTheGate() {
        var gate = SampleGate(configuration: .init(maxConsecutiveDelayRejections: 8, delayStepSamples: 32))
        let (fit, window) = (Self.fit(), Self.window())
        let slow = { (k: Int64) in Self.sample(at: k * 100_000_000, out: 1_020_000) }
        for k: Int64 in 0..<7 { #expect(gate.judge(slow(k), against: fit, window: window) == .reject(.rejectedDelay(excessNs: 1_000_000))) }
        for k: Int64 in 7..<31 { #expect(gate.judge(slow(k), against: fit, window: window) == .keep) }
        #expect(gate.delayStep == nil)
        #expect(gate.judge(slow(31), against: fit, window: window) == .restart)
        #expect(gate.slowRun == ContiguousArray((16..<32).map(slow)))
        #expect(gate.delayStep?.riseNs == 1_000_000)
    }

    @Test("a sample at the usual delay ends a run of rejections and of slow samples: no delay step")
    func runBroken() {
        var gate = SampleGate(configuration: .init(maxConsecutiveDelayRejections: 8))
        let (fit, window) = (Self.fit(), Self.window())
        for _ in 0..<7 { _ = gate.judge(Self.slow, against: fit, window: window) }
        #expect(gate.judge(Self.sample(at: 0), against: fit, window: window) == .keep)
        for _ in 0..<7 { #expect(gate.judge(Self.slow, against: fit, window: window) == .reject(.rejectedDelay(excessNs: 1_000_000))) }
        #expect(gate.delayStep == nil)
    }

    @Test("a sample back at the old minimum ends the delay step, and the window restarts from it")
    func pathBack() {
        var gate = SampleGate(configuration: .init(delayStepSamples: 8))
        for k: Int64 in 0..<8 { _ = gate.judge(Self.sample(at: k, out: 1_020_000), against: Self.fit(), window: Self.window()) }
        gate.windowRestarted()
        // Now the window holds the slower path.
        let slowerFit = Self.fit(offset: 500_000, hard: 520_000, minDelay: 1_040_000)
        let slowerWindow = Self.window(8, delay: 1_040_000)
        #expect(gate.judge(Self.sample(at: 9, out: 1_020_000), against: slowerFit, window: slowerWindow) == .keep)
        #expect(gate.delayStep != nil)
        let back = Self.sample(at: 10)
        #expect(gate.judge(back, against: slowerFit, window: slowerWindow) == .restart)
        #expect(gate.delayStep == nil)
        #expect(gate.slowRun == [back])
    }

    @Test("reset forgets the delay step; a clock step's restart does not")
    func resets() {
        var gate = SampleGate(configuration: .init(delayStepSamples: 8))
        for k: Int64 in 0..<8 { _ = gate.judge(Self.sample(at: k, out: 1_020_000), against: Self.fit(), window: Self.window()) }
        gate.windowRestarted()
        #expect(gate.delayStep != nil)
        gate.reset()
        #expect(gate.delayStep == nil)
    }

    @Test("an old-path sample that cleared the bar by chance just before the rise is not in the restarted window, nor its minimum")
    func straggler() {
        var gate = SampleGate(configuration: .init(delayStepSamples: 8))
        let (fit, window) = (Self.fit(), Self.window())
        // A spike on the old path (300 µs slow), then the path 1 ms slower.
        let spike = Self.sample(at: 0, out: 320_000)
        #expect(gate.judge(spike, against: fit, window: window) == .reject(.rejectedDelay(excessNs: 300_000)))
        var last = SampleGate.Decision.keep
        for k: Int64 in 1..<8 { last = gate.judge(Self.sample(at: k, out: 1_020_000), against: fit, window: window) }
        #expect(last == .restart)
        #expect(!gate.slowRun.contains(spike))
        #expect(gate.delayStep?.riseNs == 1_000_000)
    }
}
