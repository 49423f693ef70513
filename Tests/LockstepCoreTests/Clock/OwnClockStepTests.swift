import LockstepCore
import LockstepSimKit
import Testing

/// A device whose own clock jumps behind its agent's back notices it from its peers and steps
/// back, so that the group never sees the jump (``OwnClockStepDetector``).
@Suite("Own clock steps")
struct OwnClockStepTests {
    static let t0 = LocalTime(ns: 100 * Nanos.second)
    static let peers = (1...5).map { PeerID(high: 0, low: UInt64($0)) }

    @Test("two of three measured peers seeming to jump by the same −1 s make a step of +1 s of our own clock")
    func quorum() {
        var d = OwnClockStepDetector()
        #expect(d.onOutlier(from: Self.peers[0], residualNs: -1e9, at: Self.t0, measured: 3) == nil)
        let step = d.onOutlier(from: Self.peers[1], residualNs: -1e9 + 300_000, at: Self.t0 + .milliseconds(200), measured: 3)
        #expect(step.map { ($0.ns - 1_000_000_000).magnitude <= 300_000 } == true)
    }

    @Test("the step is the fastest agreeing sample's residual: a slow sample's (known to half its round trip) would leave the clock off")
    func fastestSampleSetsTheStep() {
        var d = OwnClockStepDetector()
        _ = d.onOutlier(from: Self.peers[0], residualNs: -50_000_000, delay: .microseconds(40), at: Self.t0, measured: 2)
        let step = d.onOutlier(from: Self.peers[1], residualNs: -49_640_000, delay: .microseconds(770), at: Self.t0 + .microseconds(700), measured: 2)
        #expect(step == .nanoseconds(50_000_000))
    }

    @Test("one peer alone, a minority, residuals of opposite sign or 5 ms apart, or a sub-2 ms residual make no step")
    func noQuorum() {
        var alone = OwnClockStepDetector()
        #expect(alone.onOutlier(from: Self.peers[0], residualNs: -1e9, at: Self.t0, measured: 1) == nil)
        #expect(alone.onOutlier(from: Self.peers[0], residualNs: -1e9, at: Self.t0 + .milliseconds(100), measured: 1) == nil)

        var minority = OwnClockStepDetector()
        _ = minority.onOutlier(from: Self.peers[0], residualNs: -1e9, at: Self.t0, measured: 4)
        #expect(minority.onOutlier(from: Self.peers[1], residualNs: -1e9, at: Self.t0, measured: 4) == nil)
        #expect(minority.onOutlier(from: Self.peers[2], residualNs: -1e9, at: Self.t0, measured: 4) != nil)

        var opposite = OwnClockStepDetector()
        _ = opposite.onOutlier(from: Self.peers[0], residualNs: -400_000_000, at: Self.t0, measured: 2)
        #expect(opposite.onOutlier(from: Self.peers[1], residualNs: 400_000_000, at: Self.t0, measured: 2) == nil)

        var apart = OwnClockStepDetector()
        _ = apart.onOutlier(from: Self.peers[0], residualNs: -1e9, at: Self.t0, measured: 2)
        #expect(apart.onOutlier(from: Self.peers[1], residualNs: -1e9 + 5e6, at: Self.t0, measured: 2) == nil)

        var small = OwnClockStepDetector()
        _ = small.onOutlier(from: Self.peers[0], residualNs: -1.5e6, at: Self.t0, measured: 2)
        #expect(small.onOutlier(from: Self.peers[1], residualNs: -1.5e6, at: Self.t0, measured: 2) == nil)
    }

    @Test("evidence older than 3 s, or answered by a sample that agreed with its estimate, no longer counts")
    func staleEvidence() {
        var old = OwnClockStepDetector()
        _ = old.onOutlier(from: Self.peers[0], residualNs: -1e9, at: Self.t0, measured: 2)
        #expect(old.onOutlier(from: Self.peers[1], residualNs: -1e9, at: Self.t0 + .milliseconds(3_001), measured: 2) == nil)

        var answered = OwnClockStepDetector()
        _ = answered.onOutlier(from: Self.peers[0], residualNs: -1e9, at: Self.t0, measured: 2)
        answered.onConsistent(from: Self.peers[0])
        #expect(answered.onOutlier(from: Self.peers[1], residualNs: -1e9, at: Self.t0, measured: 2) == nil)
    }

    /// Four hosts (and three: two peers only) measuring each other; host 1's clock jumps at 30 s
    /// and nobody is told.
    /// With `transmitStamps`, exchanges are two-step and each end's `clock_result` makes the
    /// other's exchange a sample too (as on lab hosts): results of exchanges answered before the
    /// step back must not look like a step forward.
    @Test(
        "a host whose clock jumps by +1 s, −30 s or +50 ms steps back once within 1 s; no other host ever takes it for a step of that host's clock",
        arguments: [false, true])
    func meshStepsBack(transmitStamps: Bool) {
        let runs: [(Int64, [DeviceClock])] = [
            (Nanos.second, [.identity, .fastFar, .slowFar, .identity]),
            (-30 * Nanos.second, [.identity, .fastFar, .slowFar, .identity]),
            (50 * Nanos.millisecond, [.identity, .fastFar, .slowFar]),
        ]
        for (step, clocks) in runs {
            let stepAt = 30 * Nanos.second
            var net = ClockNetwork(clocks: clocks, link: .veth, seed: 21)
            net.transmitStamps = transmitStamps
            let before = net.clocks[1].offsetNs
            var correctedAt: Int64?
            net.at(stepAt) { net in net.stepClock(1, byNs: step) }
            var worstAfter = 0.0
            net.run(until: 45 * Nanos.second) { net in
                if correctedAt == nil, !net.ownSteps[1].isEmpty { correctedAt = net.now }
                guard net.now > stepAt + 3 * Nanos.second, let e = net.estimate(0, of: 1) else { return }
                worstAfter = max(worstAfter, (e.offset(at: net.local(0, at: net.now)) - net.trueOffset(of: 1, relativeTo: 0, at: net.now)).magnitude)
            }
            #expect(net.ownSteps[1].count == 1, "step \(step): stepped \(net.ownSteps[1])")
            #expect(net.ownSteps.enumerated().allSatisfy { $0.offset == 1 || $0.element.isEmpty }, "only the host that jumped steps back")
            #expect((net.clocks[1].offsetNs - before).magnitude < 200 * Nanos.microsecond, "back on its old scale: \(net.clocks[1].offsetNs - before) ns")
            #expect(correctedAt.map { $0 - stepAt < Nanos.second } == true, "stepped back \(correctedAt.map { Double($0 - stepAt) / 1e6 } ?? -1) ms after")
            for a in clocks.indices where a != 1 { #expect(net.link(a, 1)?.steps == 0, "step \(step): host \(a) never believed host 1 stepped") }
            for b in clocks.indices where b != 1 { #expect(net.link(1, b)?.steps == 0, "step \(step): host 1 kept no step of host \(b)'s clock") }
            #expect(worstAfter < 50_000, "host 0's estimate of host 1 after: worst \(worstAfter) ns")
        }
    }
}
