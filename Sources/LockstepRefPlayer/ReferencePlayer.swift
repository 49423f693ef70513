import Foundation
import LockstepClient
import LockstepCore
import LockstepPlayerProtocol

/// A headless player that "plays" a virtual timeline off the host clock and speaks the player
/// protocol through ``LockstepClient``: the precise reference for Lockstep's own tests and
/// benchmarks, and a readable example of integrating a player.
///
/// What it models, all configurable:
/// - a **start latency**: it asks the agent for instructions at least this far ahead, and an
///   instruction due sooner is carried out this late (joining the timeline where it is then);
/// - **start jitter**: each start or seek lands up to ± this far from the instant asked for;
/// - **buffering on seek**: after a seek it reports `buffering` for this long, then `ready`;
/// - **media clock drift** (ppm): its media advances slightly fast or slow against the host clock,
///   which the agent's sync policy must correct;
/// - optional **rate control** (capability `rate`): it applies the agent's rate nudges.
///
/// Because the playback is simulated, its true position at any host time is exact
/// (``VirtualPlayback``); every change is logged as a JSON line, so a benchmark can reconstruct
/// every player's position at any instant.
public actor ReferencePlayer {
    /// Requests to make after an event (they may take a while, so they run outside the actor).
    public typealias FollowUp = @Sendable (LockstepClient) async throws -> Void

    public struct Configuration: Sendable {
        public var name = "reference"
        public var item = "lockstep://reference/10-minutes"
        public var share = Share.group
        public var durationNs: Int64 = 600 * Nanos.second
        public var outputLatencyNs: Int64 = 0
        public var startLatencyNs: Int64 = 20 * Nanos.millisecond
        public var startJitterNs: Int64 = 100 * Nanos.microsecond
        public var loadDelayNs: Int64 = 200 * Nanos.millisecond
        public var seekBufferingNs: Int64 = 0
        public var driftPPM: Double = 0
        public var canChangeRate = true
        public var reportIntervalNs: Int64 = 100 * Nanos.millisecond
        public var seed: UInt64 = 1

        public init() {}
    }

    public let configuration: Configuration
    /// Host time: `CLOCK_MONOTONIC`, or a manual clock in tests. Read once per event.
    public nonisolated let clock: any HostClock
    public private(set) var playback: VirtualPlayback
    private var rng: SplitMix64
    private var log: (@Sendable (String) -> Void)?
    private var corrections = 0
    private var correctionRestore: (at: Int64, rate: Double)?

    public init(configuration: Configuration, clock: any HostClock = MonotonicClock(), log: (@Sendable (String) -> Void)? = nil) {
        self.configuration = configuration
        self.clock = clock
        self.playback = VirtualPlayback(driftPPM: configuration.driftPPM, at: clock.now())
        self.rng = SplitMix64(seed: configuration.seed)
        self.log = log
    }

    /// Connects to the agent at `socketPath`, loads the item, and follows the group until the
    /// connection ends or the task is cancelled.
    public nonisolated func run(socketPath: String) async throws {
        let c = configuration
        try await LockstepClient.withConnection(socketPath: socketPath) { agent in
            let hello = HelloRequest(role: .player, name: c.name, capabilities: PlayerCapabilities(rate: c.canChangeRate, exactSeek: true, startAtHostTime: true), outputLatencyNs: c.outputLatencyNs, startLatencyNs: c.startLatencyNs)
            let _: HelloResult = try await agent.request("hello", hello)
            let loaded: LoadResult = try await agent.request("load", LoadRequest(item: c.item, share: c.share, durationNs: c.durationNs))
            await self.record(["kind": "loaded", "outcome": loaded.outcome.rawValue])
            try await Task.sleep(nanoseconds: UInt64(c.loadDelayNs))
            let _: EmptyResult = try await agent.request("ready")
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await event in agent.events {
                        if let follow = await self.handle(event) { try await follow(agent) }
                    }
                }
                group.addTask {
                    while !Task.isCancelled {
                        try await Task.sleep(nanoseconds: UInt64(c.reportIntervalNs))
                        let now = self.clock.now()
                        await self.restoreRateIfDue(now)
                        let position = await self.playback.position(at: now)
                        if await self.playback.nominalRate(at: now) > 0 {
                            try await agent.notify("position", PositionReport(positionNs: position, hostTimeNs: now))
                        }
                        await self.record(["kind": "tick", "host_time_ns": now, "position_ns": position])
                    }
                }
                try await group.next()
                group.cancelAll()
            }
        }
    }

    /// Applies one event to the virtual playback; returns follow-up requests to make, if any.
    func handle(_ event: LockstepClient.Event) -> FollowUp? {
        let now = clock.now()
        switch event.name {
        case "timeline":
            guard let e = try? event.decode(TimelineEvent.self) else { return nil }
            let rate = e.state == .playing ? e.rate : 0
            correctionRestore = nil
            let (at, position) = landing(e.hostTimeNs, e.positionNs, rate: rate, now: now)
            let s = playback.change(at: at, position: position, rate: rate)
            record(["kind": "segment", "cause": "timeline", "state": e.state.rawValue, "asked_host_ns": e.hostTimeNs, "asked_position_ns": e.positionNs, "segment": s, "origin": e.origin.name, "action": e.origin.action.rawValue])
        case "wait":
            guard let e = try? event.decode(WaitEvent.self) else { return nil }
            correctionRestore = nil
            let at = max(e.hostTimeNs, now)
            let s = playback.change(at: at, position: e.positionNs, rate: 0)
            record(["kind": "segment", "cause": "wait", "segment": s])
        case "correction":
            guard let e = try? event.decode(CorrectionEvent.self) else { return nil }
            corrections += 1
            if e.kind == .rate, let rate = e.rate, let until = e.untilHostTimeNs, configuration.canChangeRate {
                let base = playback.nominalRate(at: now)
                guard base > 0 else { return nil }
                let s = playback.change(at: now, rate: rate)
                correctionRestore = until > now ? (until, base) : nil
                record(["kind": "segment", "cause": "rate-correction", "error_ns": e.errorNs, "segment": s])
            } else if e.kind == .seek, let p = e.positionNs, let h = e.hostTimeNs {
                let rate = playback.nominalRate(at: now)
                let (at, position) = landing(h, p, rate: rate, now: now)
                let s = playback.change(at: at, position: position, rate: rate)
                record(["kind": "segment", "cause": "seek-correction", "error_ns": e.errorNs, "segment": s])
                return seekBuffering()
            }
        default:
            record(["kind": "event", "event": event.name])
        }
        return nil
    }

    /// Where and when an instruction "be at `position` at `host`" really lands: no earlier than
    /// the start latency allows, and off by the start jitter.
    private func landing(_ host: Int64, _ position: Int64, rate: Double, now: Int64) -> (Int64, Int64) {
        let earliest = now.addingSaturating(configuration.startLatencyNs)
        var at = max(host, earliest)
        let jitter = configuration.startJitterNs > 0 ? Int64.random(in: -configuration.startJitterNs...configuration.startJitterNs, using: &rng) : 0
        // The position asked for is where the media should be at `host`; a late start joins later.
        let onTime = position.addingSaturating(Int64(saturating: (Double(at.subtractingSaturating(host)) * rate).rounded()))
        at += jitter
        return (at, onTime)
    }

    private func restoreRateIfDue(_ now: Int64) {
        guard let r = correctionRestore, now >= r.at else { return }
        correctionRestore = nil
        let s = playback.change(at: r.at, rate: r.rate)
        record(["kind": "segment", "cause": "correction-ended", "segment": s])
    }

    private func seekBuffering() -> FollowUp? {
        let buffering = configuration.seekBufferingNs
        guard buffering > 0 else { return nil }
        return { agent in
            let _: EmptyResult = try await agent.request("buffering")
            try await Task.sleep(nanoseconds: UInt64(buffering))
            let _: EmptyResult = try await agent.request("ready")
        }
    }

    private func record(_ fields: [String: any Sendable]) {
        guard let log else { return }
        var object = fields
        object["player"] = configuration.name
        if let s = object["segment"] as? VirtualPlayback.Segment {
            object["segment"] = ["from_host_ns": s.from, "position_ns": s.position, "rate": s.rate] as [String: any Sendable]
        }
        if let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), let line = String(data: data, encoding: .utf8) {
            log(line)
        }
    }
}

