import LockstepCore
import LockstepSimKit
import Testing

// Numbered scenarios (``ClockScenario``), one seed each, checked against the figures asked of the
// estimator: plain link p99 ≤ 20 µs; 5 ms ± 1 ms jitter p99 ≤ 150 µs; 10 % loss no worse than
// plain; the same with ±200 ppm skew and ±30 s offsets; the statistical bound covers ≥ 99 % of
// evaluations while its median is ≤ 3× the p99 error; usable (< 1 ms) within 0.5 s. The same
// scenarios pooled over many seeds, and other jitter shapes, are `lockstep-bench scenarios`
// (which also runs 001 and 002, the plain and jittery links between equal clocks: 005 and 006
// here are the same links between clocks ±30 s and ±200 ppm apart).

extension ClockScenario {
    /// Runs the scenario and prints its figures.
    func runReported(_ prepare: (inout ClockNetwork) -> Void = { _ in }) -> (PairRun, ClockNetwork) {
        let (r, net) = run(prepare)
        print(r.report(name))
        return (r, net)
    }
}

let jitterLink = LinkModel.jitter
let vethLink = LinkModel.veth
let lossyVethLink = LinkModel.lossyVeth
let tightnessFloorNs = ClockScenario.tightnessFloorNs

/// One minute of simulated time, short enough for a unit test. (The tightness of the sub-µs plain
/// link is judged over two minutes: in the first the window is still filling.)
let unitDuration = 60 * Nanos.second

/// The checks every symmetric scenario must pass.
///
/// After a restart or a step (`fromStart: false`) the window holds less than a minute of samples,
/// and at the sub-µs errors of the simulated veth the bound is then up to ~5× the p99 error
/// (still honest): tightness is only asserted for runs measured from the start.
func expectSymmetricFigures(
    _ r: PairRun, p99AtMost limit: Double, fromStart: Bool = true, sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(r.stats.count > 1000, sourceLocation: sourceLocation)
    #expect(r.stats.p99 <= limit, "p99 error", sourceLocation: sourceLocation)
    #expect(r.stats.coverage >= 0.99, "statistical bound coverage", sourceLocation: sourceLocation)
    #expect(r.stats.hardCoverage == 1, "hard bound coverage", sourceLocation: sourceLocation)
    if fromStart {
        #expect(r.stats.tightness(floorNs: tightnessFloorNs) <= 3, "median bound over p99 error", sourceLocation: sourceLocation)
        #expect(r.lastAbove1ms < 500 * Nanos.millisecond, "usable within 0.5 s", sourceLocation: sourceLocation)
    }
}

@Suite("Clock scenarios", .tags(.simulation))
struct ClockScenarioTests {
    @Test("003 asymmetric 5 ms / 2 ms: the error is half the asymmetry, shown by the hard bound only")
    func asymmetricDelay() {
        let link = LinkModel(forward: LegModel(baseNs: 5_000_000), backward: LegModel(baseNs: 2_000_000))
        let (r, net) = ClockScenario(name: "003-asymmetric", link: link, peer: .fastFar, duration: unitDuration).runReported()
        // Outbound 3 ms slower than back: the peer looks 1.5 ms later than it is.
        #expect((r.stats.median - 1_500_000).magnitude < 10_000)
        #expect(r.stats.max < 1_600_000)
        #expect(r.stats.hardCoverage == 1)
        // The statistical bound assumes symmetric paths and says so by not covering it…
        #expect(r.stats.coverage < 0.01)
        // …while the hard bound is about half the round trip.
        let e = net.estimate(0, of: 1)!
        #expect(e.hardBoundNs >= 1_500_000 && e.hardBoundNs < 3_600_000)
    }

    @Test("004 10 % loss each way: no worse than the plain link")
    func loss() {
        let (r, net) = ClockScenario(name: "004-loss", link: lossyVethLink, duration: unitDuration).runReported()
        expectSymmetricFigures(r, p99AtMost: 20_000)
        #expect(net.link(0, 1)!.scheduler.outstandingCount <= 16)
    }

    @Test("005 ±200 ppm skew and ±30 s offsets on a plain link: same figures")
    func skewPlain() {
        for (local, peer) in [(DeviceClock.slowFar, DeviceClock.fastFar)] {
            let (r, net) = ClockScenario(name: "005-skew-plain \(local.skewPPM)→\(peer.skewPPM)", link: vethLink, local: local, peer: peer).runReported()
            expectSymmetricFigures(r, p99AtMost: 20_000)
            // The skew itself: (1 + s_peer) / (1 + s_local) − 1.
            let truth = ((1 + peer.skewPPM * 1e-6) / (1 + local.skewPPM * 1e-6) - 1) * 1e6
            #expect((net.estimate(0, of: 1)!.skewPPM - truth).magnitude < 0.01)
        }
    }

    @Test("006 ±200 ppm skew and ±30 s offsets with 5 ms ± 1 ms jitter: same figures")
    func skewJitter() {
        let (r, _) = ClockScenario(name: "006-skew-jitter", link: jitterLink, local: .fastFar, peer: .slowFar, duration: unitDuration).runReported()
        expectSymmetricFigures(r, p99AtMost: 150_000)
    }

    @Test("007 usable within 0.5 s, and under 100 µs soon after (0.5 s plain, 10 s with 5 ms jitter)")
    func startUp() {
        for (name, link, soon) in [("plain", vethLink, Int64(500)), ("jitter", jitterLink, 10_000)] {
            for seed: UInt64 in 1...3 {
                let (r, _) = ClockScenario(
                    name: "007-startup-\(name) seed \(seed)", link: link, local: .slowFar, peer: .fastFar,
                    duration: 20 * Nanos.second, seed: seed
                ).runReported()
                #expect(r.lastAbove1ms < 500 * Nanos.millisecond)
                #expect(r.lastAbove100us < soon * Nanos.millisecond)
            }
        }
    }

    @Test("008 peer restart: new epoch, reset, usable again within 0.5 s")
    func peerRestart() {
        let restartAt = 30 * Nanos.second
        var run = PairRun()
        var net = ClockNetwork(clocks: [.slowFar, .fastFar], link: vethLink, seed: 8, measuring: [(0, 1)])
        net.at(restartAt) { net in
            // A new process: a new clock epoch (here, a clock 7 s and 150 ppm away from the old one).
            net.restart(1, newClock: DeviceClock(offsetNs: 37 * Nanos.second, skewPPM: 50, epochNs: restartAt))
        }
        net.run(until: 70 * Nanos.second) { net in
            run.observe(net, 0, 1, measureFrom: restartAt + 5 * Nanos.second)
        }
        print(run.report("008-restart", appearedAt: restartAt))
        #expect(run.lastAbove1ms - restartAt < 500 * Nanos.millisecond)
        expectSymmetricFigures(run, p99AtMost: 20_000, fromStart: false)
    }

    /// Detection needs the next exchange after the step (up to one steady interval, 0.5 s) and
    /// two quick confirmations, so the figure is 1 s rather than the 0.5 s of a new peer.
    @Test("009 peer clock steps (+5 ms, then −30 s): detected, window restarted, usable again within 1 s")
    func clockStep() {
        for (step, name) in [(5 * Nanos.millisecond, "+5 ms"), (-30 * Nanos.second, "−30 s")] {
            let stepAt = 30 * Nanos.second
            var run = PairRun()
            var net = ClockNetwork(clocks: [.identity, .fastFar], link: vethLink, seed: 9, measuring: [(0, 1)])
            net.at(stepAt) { net in net.stepClock(1, byNs: step) }
            net.run(until: 70 * Nanos.second) { net in
                run.observe(net, 0, 1, measureFrom: stepAt + 5 * Nanos.second)
            }
            print(run.report("009-step \(name)", appearedAt: stepAt))
            #expect(net.link(0, 1)!.steps == 1)
            #expect(net.link(0, 1)!.outliers >= 1)
            #expect(run.lastAbove1ms - stepAt < 1_000 * Nanos.millisecond)
            expectSymmetricFigures(run, p99AtMost: 20_000, fromStart: false)
        }
    }

    @Test("013 a lab bridge whose directions drift in and out of a fast regime, each on its own: p99 within 20 µs, bound honest and tight")
    func driftingRegimes() {
        let link = LinkModel(forward: .labBridge(phaseNs: 0), backward: .labBridge(phaseNs: 7 * Nanos.second))
        let (r, _) = ClockScenario(name: "013-lab-bridge", link: link, local: .slowFar, peer: .fastFar, duration: unitDuration).runReported()
        expectSymmetricFigures(r, p99AtMost: 20_000)
    }

    /// One direction's minimum delay creeping (a queue, a softirq moving to a busier core; the
    /// lab's bridge did it by a few µs within a minute) tilts that direction's envelope alone,
    /// which the envelopes take for skew: the error then grows away from where they rest. The
    /// bound must grow with it: the skew is no better known than a quarter of the two
    /// directions' disagreement (`EnvelopeFit.directionsShare`). Without that, 88.3 % of the
    /// errors were covered here.
    @Test("015 outbound minimum delay creeping 4 µs up and back every minute: bound honest and tight")
    func creepingDelay() {
        let (r, _) = ClockScenario(name: "015-creep", link: .creepingVeth, local: .slowFar, peer: .fastFar, duration: 180 * Nanos.second).runReported()
        expectSymmetricFigures(r, p99AtMost: 20_000)
    }

    /// Review finding M6: an on-path attacker delaying one direction shifts the offset by half
    /// the delay, which no two-way exchange can see. The estimate must not hide it behind a
    /// tight bound: the rise is an alarm, and the bound covers the shift. (At the alarm the window
    /// restarts from the slower path: the old one leaves it then, not a minute later.)
    @Test("014 one direction 5 ms slower from 60 s on: alarm raised, bound still covers, error 2.5 ms once the old path has left the window")
    func oneWayDelayStep() {
        let stepAt = 60 * Nanos.second
        let rise = 5 * Nanos.millisecond
        for seed: UInt64 in 1...1 {
            var forward = LegModel.veth
            forward.step = (stepAt, rise)
            var run = PairRun()
            var alarmFrom: Int64?
            var alarmDropped = false
            var late = ErrorStats()
            var net = ClockNetwork(
                clocks: [.slowFar, .fastFar], link: LinkModel(forward: forward, backward: .veth), seed: seed, measuring: [(0, 1)])
            net.run(until: 130 * Nanos.second) { net in
                run.observe(net, 0, 1, measureFrom: stepAt)
                guard net.now >= stepAt, let e = net.estimate(0, of: 1) else { return }
                if e.delayStep.ns > 0 {
                    alarmFrom = alarmFrom ?? net.now
                    #expect((e.delayStep.ns - rise).magnitude < 100 * Nanos.microsecond)
                } else if alarmFrom != nil {
                    alarmDropped = true
                }
                // From the alarm on, only the slower path is in the window.
                if alarmFrom != nil {
                    let t = net.local(0, at: net.now)
                    let error = e.offset(at: t) - net.trueOffset(of: 1, relativeTo: 0, at: net.now)
                    late.add(error: error, bound: e.errorBound(at: t), hardBound: e.hardBound(at: t))
                }
            }
            print("[014-one-way-step seed \(seed), from the step] \(run.stats) alarm from \(ErrorStats.format(Double((alarmFrom ?? 0) - stepAt) / 1e6)) ms")
            print("[014-one-way-step seed \(seed), from the alarm] \(late)")
            #expect(run.stats.coverage >= 0.99, "statistical bound coverage after the step")
            #expect(run.stats.hardCoverage == 1)
            // Raised after 32 slow exchanges (8 s at the slowest steady rate), and kept.
            #expect(alarmFrom.map { $0 - stepAt <= 8_500 * Nanos.millisecond } == true)
            #expect(!alarmDropped)
            // Physics: the outbound leg is 5 ms slower, so the peer looks 2.5 ms later than it is
            // (and 0.5 µs more: its clock, 400 ppm faster, counts those 5 ms as 5.002 ms).
            #expect(late.count > 5000)
            #expect((late.median - 2_500_500).magnitude < 1_000)
            #expect(late.max < 2_505_000)
            #expect(late.coverage == 1)
        }
    }

    @Test("012 the checks can fail: a truth off by 1 ms fails every figure")
    func checksCanFail() {
        let (r, _) = ClockScenario(name: "012-wrong-truth", link: vethLink, duration: unitDuration, truthBiasNs: 1_000_000).runReported()
        #expect(r.stats.median > 990_000)
        #expect(r.stats.coverage < 0.01)
        withKnownIssue("the error is measured against a wrong truth") {
            expectSymmetricFigures(r, p99AtMost: 20_000)
        }
    }
}
