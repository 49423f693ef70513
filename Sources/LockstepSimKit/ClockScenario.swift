import LockstepCore

/// A numbered scenario in the manner of chrony's simulation tests: two simulated hosts, host 0
/// measuring host 1 with the agent's ``PeerClocks`` (its ``ExchangeScheduler`` and
/// ``ClockEstimator``) for minutes of simulated time, the error checked against the true clocks
/// every 10 ms.
public struct ClockScenario: Sendable {
    public var name: String
    public var link: LinkModel
    public var local: DeviceClock
    public var peer: DeviceClock
    public var duration: Int64
    /// Statistics start here (the start-up is judged by the time-to-usable figures).
    public var measureFrom: Int64
    public var seed: UInt64
    public var estimator: ClockEstimator.Configuration
    public var scheduler: ExchangeScheduler.Configuration
    /// Falsifies the truth (to show that the checks can fail).
    public var truthBiasNs: Double

    public init(
        name: String, link: LinkModel, local: DeviceClock = .identity, peer: DeviceClock = .identity,
        duration: Int64 = 120 * Nanos.second, measureFrom: Int64 = 5 * Nanos.second, seed: UInt64 = 1,
        estimator: ClockEstimator.Configuration = .init(), scheduler: ExchangeScheduler.Configuration = .init(),
        truthBiasNs: Double = 0
    ) {
        self.name = name
        self.link = link
        self.local = local
        self.peer = peer
        self.duration = duration
        self.measureFrom = measureFrom
        self.seed = seed
        self.estimator = estimator
        self.scheduler = scheduler
        self.truthBiasNs = truthBiasNs
    }

    /// Runs the scenario; `prepare` may schedule events (restarts, steps) first.
    public func run(_ prepare: (inout ClockNetwork) -> Void = { _ in }) -> (PairRun, ClockNetwork) {
        var configuration = PeerClocks.Configuration()
        configuration.estimator = estimator
        configuration.exchanges = scheduler
        var net = ClockNetwork(clocks: [local, peer], link: link, seed: seed, configuration: configuration, measuring: [(0, 1)])
        prepare(&net)
        var result = PairRun()
        net.run(until: duration) { net in
            result.observe(net, 0, 1, measureFrom: measureFrom, truthBiasNs: truthBiasNs)
        }
        return (result, net)
    }

    /// The same scenario over several seeds, statistics pooled (per-run figures vary: the
    /// scheduler's rate follows the bound, so each seed takes its own path). Also returns the
    /// slowest start-up: the latest time any seed's error was still ≥ 1 ms.
    public func pooled(seeds: ClosedRange<UInt64>) -> (stats: ErrorStats, slowestUsable: Int64) {
        var all = ErrorStats()
        var slowest: Int64 = 0
        for seed in seeds {
            var s = self
            s.seed = seed
            let (r, _) = s.run()
            all.merge(r.stats)
            slowest = max(slowest, r.lastAbove1ms)
        }
        return (all, slowest)
    }

    /// Errors below this count as this much when judging tightness (see ``ErrorStats/tightness(floorNs:)``):
    /// a third of the 5 µs bound a link must keep (``ExchangeScheduler/Configuration/targetBoundNs``),
    /// so that "tight" means within 3× the p99 error or within the target, whichever is wider.
    /// (The steady rate slows down until the bound would outgrow the target, not until it is as
    /// tight as the link allows: on the simulated sub-µs links the bound is then 1–3.4 µs against
    /// p99 errors of 0.3–0.6 µs.)
    public static let tightnessFloorNs = ExchangeScheduler.Configuration().targetBoundNs / 3
}
