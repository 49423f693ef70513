import Foundation
import LockstepClient
import LockstepCore
import LockstepPlayerProtocol
import NIOCore
import NIOPosix

/// A headless player that "plays" a virtual timeline off the host clock, coordinated by the
/// Swift SDK's ``PlaybackCoordinator`` (it is the coordinator's ``PlayerDelegate``): the precise
/// reference for Lockstep's own tests and benchmarks, and a readable example of a player built on
/// the SDK.
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
///
/// It runs on its coordinator's event loop (``eventLoop``, its executor): a timeline the agent
/// sends reaches it on the thread that read it, as the SDK lets any player do.
public actor ReferencePlayer: PlayerDelegate {
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
    /// This player's executor, and its coordinator's.
    public nonisolated let eventLoop: any EventLoop
    public nonisolated var unownedExecutor: UnownedSerialExecutor { eventLoop.executor.asUnownedSerialExecutor() }
    public private(set) var playback: VirtualPlayback
    private var rng: SplitMix64
    private var log: (@Sendable (String) -> Void)?
    /// The coordinator driving this player, while ``run(socketPath:)`` runs (for seek buffering).
    private var coordinator: PlaybackCoordinator?
    private let encoder = JSONEncoder()

    public init(configuration: Configuration, clock: any HostClock = MonotonicClock(), log: (@Sendable (String) -> Void)? = nil) {
        self.configuration = configuration
        self.clock = clock
        self.eventLoop = MultiThreadedEventLoopGroup.singleton.next()
        self.playback = VirtualPlayback(driftPPM: configuration.driftPPM, at: clock.now())
        self.rng = SplitMix64(seed: configuration.seed)
        self.log = log
    }

    /// Connects to the agent at `socketPath` (reconnecting if it restarts), loads the item, and
    /// follows the group until the task is cancelled.
    public nonisolated func run(socketPath: String) async throws {
        let c = configuration
        var config = PlaybackCoordinator.Configuration(
            name: c.name, socketPath: socketPath, capabilities: PlayerCapabilities(rate: c.canChangeRate, exactSeek: true, startAtHostTime: true),
            outputLatencyNs: c.outputLatencyNs, startLatencyNs: c.startLatencyNs)
        config.reportIntervalNs = c.reportIntervalNs
        config.eventLoop = eventLoop
        let coordinator = PlaybackCoordinator(delegate: self, configuration: config, clock: clock)
        await attach(coordinator)
        try await coordinator.run { coordinator in
            let outcome = try await coordinator.transition(toItem: c.item, share: c.share, durationNs: c.durationNs)
            await self.recordLoaded(outcome.rawValue)
            try await Task.sleep(nanoseconds: UInt64(c.loadDelayNs))
            try await coordinator.setReady()
            // Nothing to do but follow: the coordinator reports the position, and the log's
            // segments give it at any instant (a line per tick, with the way lines were
            // written, was half of a playing player's CPU: docs/scale.md, twenty-fifth step).
            while !Task.isCancelled { try await Task.sleep(nanoseconds: 3_600 * UInt64(Nanos.second)) }
        }
    }

    private func attach(_ coordinator: PlaybackCoordinator) { self.coordinator = coordinator }

    // MARK: PlayerDelegate

    public func play(_ command: PlayCommand) { follow(command, state: "playing", rate: command.rate) }

    public func pause(_ command: PauseCommand) { follow(command, state: command.stopped ? "stopped" : "paused", rate: 0) }

    public func buffer(_ command: BufferingCommand) {
        let s = playback.change(at: max(command.hostTimeNs, clock.now()), position: command.itemTimeNs, rate: 0)
        record(segment: s, cause: "wait")
    }

    public func seek(_ command: SeekCommand) {
        let (at, position) = landing(command.hostTimeNs, command.itemTimeNs, rate: command.rate, now: clock.now())
        let s = playback.change(at: at, position: position, rate: command.rate)
        record(segment: s, cause: "seek-correction") { $0.errorNs = command.errorNs }
        seekBuffering()
    }

    public func setRate(_ rate: Double) {
        let now = clock.now()
        // Nudges only bend playing media; a paused player has nothing to correct.
        guard playback.nominalRate(at: now) > 0 else { return }
        let s = playback.change(at: now, rate: rate)
        record(segment: s, cause: "rate-correction")
    }

    public func currentPosition() -> PositionSample? {
        let now = clock.now()
        return PositionSample(itemTimeNs: playback.position(at: now), hostTimeNs: now)
    }

    /// Carries out a group timeline; its log line also says when it arrived (`received_host_ns`)
    /// and which command set it (the origin's peer id and command number).
    private func follow(_ command: some TimedCommand, state: String, rate: Double) {
        let now = clock.now()
        let (at, position) = landing(command.hostTimeNs, command.itemTimeNs, rate: rate, now: now)
        let s = playback.change(at: at, position: position, rate: rate)
        let o = command.originator
        record(segment: s, cause: "timeline") {
            $0.state = state
            $0.receivedHostNs = now
            $0.askedHostNs = command.hostTimeNs
            $0.askedPositionNs = command.itemTimeNs
            $0.origin = o.name
            $0.originPeerID = o.peerID
            $0.originLamport = o.lamport
            $0.action = o.action.rawValue
        }
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

    /// After a seek, the player refills its buffer for a while (if configured so).
    private func seekBuffering() {
        let buffering = configuration.seekBufferingNs
        guard buffering > 0, let coordinator else { return }
        Task {
            try await coordinator.setReady(false)
            try await Task.sleep(nanoseconds: UInt64(buffering))
            try await coordinator.setReady()
        }
    }

    private func recordLoaded(_ outcome: String) {
        var line = PlayerLogLine(kind: "loaded", player: configuration.name)
        line.outcome = outcome
        write(line)
    }

    private func record(segment: VirtualPlayback.Segment, cause: String, _ fill: (inout PlayerLogLine) -> Void = { _ in }) {
        var line = PlayerLogLine(kind: "segment", player: configuration.name)
        line.segment = segment
        line.cause = cause
        fill(&line)
        write(line)
    }

    private func write(_ line: PlayerLogLine) {
        guard let log, let data = try? encoder.encode(line), let text = String(data: data, encoding: .utf8) else { return }
        log(text)
    }
}

