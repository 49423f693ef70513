import LockstepCore

/// A clock scenario run over many seeds, with the figures it must reach: what
/// `lockstep-bench scenarios` runs and reports. (The unit tests run each scenario once, on one
/// seed, and shorter.)
public struct ClockScenarioCheck: Sendable {
    /// A short identifier, such as `001-plain`.
    public var id: String
    /// What the scenario shows, in one line.
    public var title: String
    public var scenario: ClockScenario
    public var seeds: ClosedRange<UInt64>
    /// The largest p99 error allowed, in nanoseconds (nil: not judged).
    public var p99AtMostNs: Double?
    /// The share of evaluations the statistical bound must cover.
    public var coverageAtLeast: Double = 0.99
    /// The largest median bound over p99 error (see ``ErrorStats/tightness(floorNs:)``).
    public var tightnessAtMost: Double = 3
    /// The latest a seed's error may still be ≥ 1 ms, in nanoseconds (nil: not judged).
    public var usableWithinNs: Int64? = 500 * Nanos.millisecond

    public init(id: String, title: String, scenario: ClockScenario, seeds: ClosedRange<UInt64>, p99AtMostNs: Double?) {
        self.id = id
        self.title = title
        self.scenario = scenario
        self.seeds = seeds
        self.p99AtMostNs = p99AtMostNs
    }

    /// The figures of one check.
    public struct Outcome: Sendable {
        public var check: ClockScenarioCheck
        public var stats: ErrorStats
        public var slowestUsableNs: Int64
        /// The figures that missed their target, by name (empty: passed).
        public var failures: [String]
        public var passed: Bool { failures.isEmpty }
    }

    /// Runs every seed and judges the pooled figures.
    public func run() -> Outcome {
        let (stats, slowest) = scenario.pooled(seeds: seeds)
        var failures: [String] = []
        if let limit = p99AtMostNs, !(stats.p99 <= limit) { failures.append("p99") }
        if !(stats.coverage >= coverageAtLeast) { failures.append("coverage") }
        if stats.hardCoverage != 1 { failures.append("hard coverage") }
        if !(stats.tightness(floorNs: ClockScenario.tightnessFloorNs) <= tightnessAtMost) { failures.append("tightness") }
        if let limit = usableWithinNs, slowest >= limit { failures.append("usable") }
        return Outcome(check: self, stats: stats, slowestUsableNs: slowest, failures: failures)
    }

    /// The scenarios of the brief, each over ten seeds: ±200 ppm and ±30 s apart where the
    /// scenario says so; p99 ≤ 20 µs on a plain link and ≤ 150 µs with 5 ms ± 1 ms of jitter; the
    /// bound honest (≥ 99 %) and tight (median ≤ 3× p99); usable within 0.5 s.
    public static let catalog: [ClockScenarioCheck] = {
        let seeds: ClosedRange<UInt64> = 1...10
        var exponential = LegModel.netemJitter
        exponential.jitter = .exponential(meanNs: 1_000_000)
        var twoStage = LegModel.netemJitter
        twoStage.jitter = .twoStage(meanNs: 1_000_000)
        let bridge = LinkModel(forward: .labBridge(phaseNs: 0), backward: .labBridge(phaseNs: 7 * Nanos.second))
        func check(_ id: String, _ title: String, _ link: LinkModel, local: DeviceClock = .identity, peer: DeviceClock, p99: Double) -> ClockScenarioCheck {
            ClockScenarioCheck(id: id, title: title, scenario: ClockScenario(name: id, link: link, local: local, peer: peer), seeds: seeds, p99AtMostNs: p99)
        }
        return [
            check("001-plain", "veth link", .veth, peer: .identity, p99: 20_000),
            check("002-jitter", "5 ms ± 1 ms uniform jitter each way", .jitter, peer: .identity, p99: 150_000),
            check("004-loss", "veth, 10 % loss each way", .lossyVeth, peer: .identity, p99: 20_000),
            check("005-skew-plain", "veth, clocks ±30 s and ±200 ppm apart", .veth, local: .slowFar, peer: .fastFar, p99: 20_000),
            check("006-skew-jitter", "jitter, clocks ±30 s and ±200 ppm apart", .jitter, local: .slowFar, peer: .fastFar, p99: 150_000),
            check("010-plain", "veth, peer 30 s and 200 ppm ahead", .veth, peer: .fastFar, p99: 20_000),
            check("010-jitter", "jitter, peer 30 s and 200 ppm ahead", .jitter, peer: .fastFar, p99: 150_000),
            check("010-loss", "10 % loss, peer 30 s and 200 ppm ahead", .lossyVeth, peer: .fastFar, p99: 20_000),
            check("011-exponential", "4 ms + exponential jitter (mean 1 ms) each way", .symmetric(exponential), peer: .fastFar, p99: 150_000),
            check("011-two-stage", "4 ms + two queues in a row (mean 1 ms) each way", .symmetric(twoStage), peer: .fastFar, p99: 150_000),
            check("013-lab-bridge", "the lab's bridge: each direction drifts in and out of a fast regime", bridge, local: .slowFar, peer: .fastFar, p99: 20_000),
            check("015-creep", "veth, outbound minimum delay creeping 4 µs up and back every minute", .creepingVeth, local: .slowFar, peer: .fastFar, p99: 20_000),
        ]
    }()
}
