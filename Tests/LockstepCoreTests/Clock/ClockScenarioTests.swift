import LockstepCore
import Testing

/// Numbered scenarios in the manner of chrony's simulation tests: two simulated hosts, host 0
/// measuring host 1 through ``ExchangeScheduler`` and ``ClockEstimator``, minutes of simulated
/// time; errors are checked against the true clocks every 10 ms of host time.
///
/// Figures asked for: plain link p99 ≤ 20 µs; 5 ms ± 1 ms jitter p99 ≤ 150 µs; 10 % loss no
/// worse than plain; the same with ±200 ppm skew and ±30 s offsets; the statistical bound covers
/// ≥ 99 % of evaluations while its median is ≤ 3× the p99 error; usable (< 1 ms) within 0.5 s.
struct ClockScenario {
    var name: String
    var link: LinkModel
    var local = DeviceClock.identity
    var peer = DeviceClock.identity
    var duration: Int64 = 120 * Nanos.second
    /// Statistics start here (the start-up is judged by the time-to-usable figures).
    var measureFrom: Int64 = 5 * Nanos.second
    var seed: UInt64 = 1
    var estimator = ClockEstimator.Configuration()
    var scheduler = ExchangeScheduler.Configuration()
    /// Falsifies the truth (to show that the checks can fail).
    var truthBiasNs: Double = 0
    var quiet = false

    func run(_ prepare: (inout ClockNetwork) -> Void = { _ in }) -> (PairRun, ClockNetwork) {
        var net = ClockNetwork(
            clocks: [local, peer], link: link, seed: seed,
            estimator: estimator, scheduler: scheduler, measuring: [(0, 1)]
        )
        prepare(&net)
        var result = PairRun()
        net.run(until: duration) { net in
            result.observe(net, 0, 1, measureFrom: measureFrom, truthBiasNs: truthBiasNs)
        }
        if !quiet { print(result.report(name)) }
        return (result, net)
    }

    /// The same scenario over several seeds, statistics pooled (per-run figures vary: the
    /// scheduler's rate follows the bound, so each seed takes its own path).
    func pooled(seeds: ClosedRange<UInt64>) -> ErrorStats {
        var all = ErrorStats()
        for seed in seeds {
            var s = self
            s.seed = seed
            s.quiet = true
            let (r, _) = s.run()
            all.errors += r.stats.errors
            all.bounds += r.stats.bounds
            all.covered += r.stats.covered
            all.hardCovered += r.stats.hardCovered
        }
        print("[\(name), seeds \(seeds)] \(all)")
        return all
    }
}

extension DeviceClock {
    /// The worst clocks of the brief: ±30 s apart, ±200 ppm.
    static let fastFar = DeviceClock(offsetNs: 30 * Nanos.second, skewPPM: 200, epochNs: 0)
    static let slowFar = DeviceClock(offsetNs: -30 * Nanos.second, skewPPM: -200, epochNs: 0)
}

let jitterLink = LinkModel.symmetric(.netemJitter)
let vethLink = LinkModel.symmetric(.veth)
var lossyVethLink: LinkModel {
    var leg = LegModel.veth
    leg.loss = 0.1
    return .symmetric(leg)
}

/// Errors below this count as this much when judging tightness (see ``ErrorStats/tightness(floorNs:)``).
let tightnessFloorNs = 200.0

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

@Suite("Clock scenarios")
struct ClockScenarioTests {
    @Test("001 plain veth link: p99 error within 20 µs, bound honest and tight")
    func plainLink() {
        for seed: UInt64 in 1...3 {
            let (r, _) = ClockScenario(name: "001-plain seed \(seed)", link: vethLink, seed: seed).run()
            expectSymmetricFigures(r, p99AtMost: 20_000)
        }
    }

    @Test("002 5 ms ± 1 ms uniform jitter on each leg: p99 error within 150 µs")
    func symmetricJitter() {
        for seed: UInt64 in 1...3 {
            let (r, _) = ClockScenario(name: "002-jitter seed \(seed)", link: jitterLink, seed: seed).run()
            expectSymmetricFigures(r, p99AtMost: 150_000)
        }
    }

    @Test("003 asymmetric 5 ms / 2 ms: the error is half the asymmetry, shown by the hard bound only")
    func asymmetricDelay() {
        let link = LinkModel(forward: LegModel(baseNs: 5_000_000), backward: LegModel(baseNs: 2_000_000))
        let (r, net) = ClockScenario(name: "003-asymmetric", link: link, peer: .fastFar).run()
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
        for seed: UInt64 in 1...3 {
            let (r, net) = ClockScenario(name: "004-loss seed \(seed)", link: lossyVethLink, seed: seed).run()
            expectSymmetricFigures(r, p99AtMost: 20_000)
            #expect(net.agents[0][1]!.scheduler.outstandingCount <= 16)
        }
    }

    @Test("005 ±200 ppm skew and ±30 s offsets on a plain link: same figures")
    func skewPlain() {
        for (local, peer) in [(DeviceClock.slowFar, DeviceClock.fastFar), (.fastFar, .slowFar), (.identity, .fastFar)] {
            let (r, net) = ClockScenario(name: "005-skew-plain \(local.skewPPM)→\(peer.skewPPM)", link: vethLink, local: local, peer: peer).run()
            expectSymmetricFigures(r, p99AtMost: 20_000)
            // The skew itself: (1 + s_peer) / (1 + s_local) − 1.
            let truth = ((1 + peer.skewPPM * 1e-6) / (1 + local.skewPPM * 1e-6) - 1) * 1e6
            #expect((net.estimate(0, of: 1)!.skewPPM - truth).magnitude < 0.01)
        }
    }

    @Test("006 ±200 ppm skew and ±30 s offsets with 5 ms ± 1 ms jitter: same figures")
    func skewJitter() {
        for (local, peer) in [(DeviceClock.slowFar, DeviceClock.fastFar), (.fastFar, .slowFar)] {
            let (r, _) = ClockScenario(name: "006-skew-jitter \(local.skewPPM)→\(peer.skewPPM)", link: jitterLink, local: local, peer: peer).run()
            expectSymmetricFigures(r, p99AtMost: 150_000)
        }
    }

    @Test("007 usable within 0.5 s, and under 100 µs soon after (0.5 s plain, 10 s with 5 ms jitter)")
    func startUp() {
        for (name, link, soon) in [("plain", vethLink, Int64(500)), ("jitter", jitterLink, 10_000)] {
            for seed: UInt64 in 1...5 {
                let (r, _) = ClockScenario(
                    name: "007-startup-\(name) seed \(seed)", link: link, local: .slowFar, peer: .fastFar,
                    duration: 20 * Nanos.second, seed: seed
                ).run()
                #expect(r.lastAbove1ms < 500 * Nanos.millisecond)
                #expect(r.lastAbove100us < soon * Nanos.millisecond)
            }
        }
    }

    @Test("008 peer restart: new epoch, reset, usable again within 0.5 s")
    func peerRestart() {
        let restartAt = 60 * Nanos.second
        var run = PairRun()
        var net = ClockNetwork(clocks: [.slowFar, .fastFar], link: vethLink, seed: 8, measuring: [(0, 1)])
        net.at(restartAt) { net in
            // A new process: a new clock epoch (here, a clock 7 s and 150 ppm away from the old one).
            net.restart(1, newClock: DeviceClock(offsetNs: 37 * Nanos.second, skewPPM: 50, epochNs: restartAt))
        }
        net.run(until: 120 * Nanos.second) { net in
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
            let stepAt = 60 * Nanos.second
            var run = PairRun()
            var net = ClockNetwork(clocks: [.identity, .fastFar], link: vethLink, seed: 9, measuring: [(0, 1)])
            net.at(stepAt) { net in net.stepClock(1, byNs: step) }
            net.run(until: 120 * Nanos.second) { net in
                run.observe(net, 0, 1, measureFrom: stepAt + 5 * Nanos.second)
            }
            print(run.report("009-step \(name)", appearedAt: stepAt))
            let verdicts = net.agents[0][1]!.verdicts
            #expect(verdicts.filter { if case .clockStepped = $0 { true } else { false } }.count == 1)
            #expect(verdicts.contains { if case .rejectedOutlier = $0 { true } else { false } })
            #expect(run.lastAbove1ms - stepAt < 1_000 * Nanos.millisecond)
            expectSymmetricFigures(run, p99AtMost: 20_000, fromStart: false)
        }
    }

    @Test("010 bound coverage ≥ 99 % and median bound ≤ 3× p99 error, pooled over many seeds")
    func pooledCoverage() {
        let scenarios = [
            ClockScenario(name: "010-pooled plain", link: vethLink, peer: .fastFar, duration: 120 * Nanos.second),
            ClockScenario(name: "010-pooled jitter", link: jitterLink, peer: .fastFar, duration: 120 * Nanos.second),
            ClockScenario(name: "010-pooled loss", link: lossyVethLink, peer: .fastFar, duration: 120 * Nanos.second),
        ]
        for scenario in scenarios {
            let stats = scenario.pooled(seeds: 11...20)
            #expect(stats.coverage >= 0.99)
            #expect(stats.tightness(floorNs: tightnessFloorNs) <= 3)
            #expect(stats.hardCoverage == 1)
        }
    }

    @Test("011 other jitter shapes (exponential, two queues in a row): bound still honest and tight")
    func otherJitterShapes() {
        var exponential = LegModel.netemJitter
        exponential.jitter = .exponential(meanNs: 1_000_000)
        var twoStage = LegModel.netemJitter
        twoStage.jitter = .twoStage(meanNs: 1_000_000)
        for (name, leg) in [("exponential", exponential), ("two-stage", twoStage)] {
            let stats = ClockScenario(name: "011-\(name)", link: .symmetric(leg), peer: .fastFar, duration: 120 * Nanos.second)
                .pooled(seeds: 1...6)
            #expect(stats.p99 <= 150_000)
            #expect(stats.coverage >= 0.99)
            #expect(stats.tightness(floorNs: tightnessFloorNs) <= 3)
        }
    }

    @Test("013 a lab bridge whose directions drift in and out of a fast regime, each on its own: p99 within 20 µs, bound honest and tight")
    func driftingRegimes() {
        let link = LinkModel(forward: .labBridge(phaseNs: 0), backward: .labBridge(phaseNs: 7 * Nanos.second))
        let stats = ClockScenario(name: "013-lab-bridge", link: link, local: .slowFar, peer: .fastFar).pooled(seeds: 1...4)
        #expect(stats.p99 <= 20_000)
        #expect(stats.coverage >= 0.99)
        #expect(stats.tightness(floorNs: tightnessFloorNs) <= 3)
        #expect(stats.hardCoverage == 1)
    }

    /// Review finding M6: an on-path attacker delaying one direction shifts the offset by half
    /// the delay, which no two-way exchange can see. The estimate must not hide it behind a
    /// tight bound: the rise is an alarm, and the bound covers the shift. (At the alarm the window
    /// restarts from the slower path: the old one leaves it then, not a minute later.)
    @Test("014 one direction 5 ms slower from 60 s on: alarm raised, bound still covers, error 2.5 ms once the old path has left the window")
    func oneWayDelayStep() {
        let stepAt = 60 * Nanos.second
        let rise = 5 * Nanos.millisecond
        for seed: UInt64 in 1...2 {
            var forward = LegModel.veth
            forward.step = (stepAt, rise)
            var run = PairRun()
            var alarmFrom: Int64?
            var alarmDropped = false
            var late = ErrorStats()
            var net = ClockNetwork(
                clocks: [.slowFar, .fastFar], link: LinkModel(forward: forward, backward: .veth), seed: seed, measuring: [(0, 1)])
            net.run(until: 150 * Nanos.second) { net in
                run.observe(net, 0, 1, measureFrom: stepAt)
                guard net.now >= stepAt, let e = net.estimate(0, of: 1) else { return }
                if e.delayStepNs > 0 {
                    alarmFrom = alarmFrom ?? net.now
                    #expect((e.delayStepNs - rise).magnitude < 100 * Nanos.microsecond)
                } else if alarmFrom != nil {
                    alarmDropped = true
                }
                // From the alarm on, only the slower path is in the window.
                if alarmFrom != nil {
                    let t = net.local(0, atHost: net.now)
                    let error = e.offset(atLocal: t) - net.trueOffset(of: 1, relativeTo: 0, atHost: net.now)
                    late.add(error: error, bound: e.errorBound(atLocal: t), hardBound: e.hardBound(atLocal: t))
                }
            }
            print("[014-one-way-step seed \(seed), from the step] \(run.stats) alarm from \(fmt(Double((alarmFrom ?? 0) - stepAt) / 1e6)) ms")
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
        let (r, _) = ClockScenario(name: "012-wrong-truth", link: vethLink, truthBiasNs: 1_000_000).run()
        #expect(r.stats.median > 990_000)
        #expect(r.stats.coverage < 0.01)
        withKnownIssue("the error is measured against a wrong truth") {
            expectSymmetricFigures(r, p99AtMost: 20_000)
        }
    }
}
