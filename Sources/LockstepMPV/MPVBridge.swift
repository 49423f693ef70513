import Foundation
import LockstepClient
import LockstepCore
import LockstepPlayerProtocol
import Logging
import Synchronization

/// `lockstep mpv`'s shell: one mpv (its JSON IPC socket) coordinated with the group by the
/// Swift SDK's ``PlaybackCoordinator``, with ``MPVBridgePolicy`` deciding what mpv does. The
/// coordinator speaks to the agent (hello with the calibrated start latency, load, readiness,
/// position reports, drift corrections, reconnection when the agent restarts); its commands
/// reach the policy through ``Player``, this bridge's ``PlayerDelegate``. The shell observes
/// mpv's `pause`, `speed` and `paused-for-cache`, its `file-loaded`, `end-file`, `seek` and
/// `playback-restart` events, reads `audio-pts` with host timestamps (for the coordinator's
/// reports, and for the policy while the group's pause is pending or mpv stands paused), and
/// carries out the policy's actions on time (an unpause at an anchor is written within a few
/// microseconds of its host time: the last millisecond is waited out by spinning, not sleeping).
///
/// It logs what the user and the group did and what failed at `info` and `warning`, and every
/// input with the actions it caused at `debug`.
public final class MPVBridge: Sendable {
    public struct Options: Sendable {
        /// The agent's player socket.
        public var agentSocket: String
        /// mpv's `--input-ipc-server` socket.
        public var mpvSocket: String
        /// The player's name, shown to the other peers.
        public var name = "mpv"
        /// Delay from mpv's clock to light and sound (HDMI, Bluetooth…), declared to the agent.
        public var outputLatencyNs: Int64 = 0
        /// Precision of the position reports (`audio-pts` read over the IPC): the agent does not
        /// correct errors smaller than this.
        public var syncToleranceNs: Int64 = 1 * Nanos.millisecond
        /// Position readings whose IPC round trip is longer than this are dropped.
        public var maxReadingRoundTripNs: Int64 = 1 * Nanos.millisecond
        /// How often the position is read (and reported, by the coordinator) while playing.
        public var reportIntervalNs: Int64 = 100 * Nanos.millisecond
        /// How often while the group's pause is pending (``MPVBridgePolicy/wantsPositionsSoon``).
        public var urgentReportIntervalNs: Int64 = 10 * Nanos.millisecond
        /// How many exact seeks measure a paused mpv's start latency before `hello` (when the
        /// start latency is not fixed: ``MPVBridgePolicy/Configuration/startLatencyNs``).
        public var calibrationSeeks = 8
        public var policy = MPVBridgePolicy.Configuration()

        public init(agentSocket: String, mpvSocket: String) {
            self.agentSocket = agentSocket
            self.mpvSocket = mpvSocket
        }
    }

    public let options: Options
    /// Host time: the policy's `now`, the timer's deadlines and the readings' stamps.
    public let clock: any HostClock
    private let logger: Logger
    /// What this mpv's seeks cost, kept from one session to the next (a session with a new
    /// mpv connection declares what the last one learnt).
    private let calibration = Locked<StartLatencyCalibration?>(nil)

    public init(options: Options, logger: Logger, clock: any HostClock = MonotonicClock()) {
        self.options = options
        self.logger = logger
        self.clock = clock
    }

    private enum Message: Sendable {
        case input(MPVBridgePolicy.Input)
        /// The coordinator is connected to the agent again.
        case agentConnected
        case mpvClosed
    }

    /// A value shared between the session's tasks (and sessions).
    private final class Locked<Value: Sendable>: Sendable {
        let value: Mutex<Value>
        init(_ initial: Value) { value = Mutex(initial) }
        func withLock<R: Sendable>(_ body: (inout Value) -> R) -> R { value.withLock { body(&$0) } }
    }

    /// The coordinator's ``PlayerDelegate``: its commands become the policy's inputs (carried
    /// out on time by the session's loop, so each returns at once), and ``currentPosition()``
    /// reads mpv, tells the policy, and hands the coordinator the readings the policy reports.
    private final class Player: PlayerDelegate {
        let sink: AsyncStream<Message>.Continuation
        let reader: PositionReader
        /// The policy as of the last input the loop handled.
        let policy: Locked<MPVBridgePolicy>
        let clock: any HostClock

        init(sink: AsyncStream<Message>.Continuation, reader: PositionReader, policy: Locked<MPVBridgePolicy>, clock: any HostClock) {
            self.sink = sink
            self.reader = reader
            self.policy = policy
            self.clock = clock
        }

        func play(_ command: PlayCommand) async { sink.yield(.input(.command(.play(command)))) }
        func pause(_ command: PauseCommand) async { sink.yield(.input(.command(.pause(command)))) }
        func buffer(_ command: BufferingCommand) async { sink.yield(.input(.command(.buffer(command)))) }
        func seek(_ command: SeekCommand) async { sink.yield(.input(.command(.seek(command)))) }
        func setRate(_ rate: Double) async { sink.yield(.input(.rate(rate))) }

        func currentPosition() async -> PositionSample? {
            guard let sample = await reader.read() else { return nil }
            sink.yield(.input(.position(sample.itemTimeNs, at: sample.hostTimeNs)))
            let now = clock.now()
            return policy.withLock { $0.reports(readingAt: sample.hostTimeNs, now: now) } ? sample : nil
        }
    }

    /// Reads where mpv's output is: `audio-pts` (or `time-pos` without audio), stamped with the
    /// middle of its IPC round trip; nil when the round trip took longer than allowed.
    private final class PositionReader: Sendable {
        let mpv: MPVConnection
        let maxRoundTripNs: Int64
        private let property = Mutex("audio-pts")

        init(mpv: MPVConnection, maxRoundTripNs: Int64) {
            self.mpv = mpv
            self.maxRoundTripNs = maxRoundTripNs
        }

        func read() async -> PositionSample? {
            let name = property.withLock { $0 }
            guard let reply = try? await mpv.send(["get_property", .string(name)]) else { return nil }
            if !reply.succeeded {
                // No audio track: fall back to the coarser time-pos.
                if reply.error == "property unavailable", name != "time-pos", (try? await mpv.get("aid").bool) == false {
                    property.withLock { $0 = "time-pos" }
                }
                return nil
            }
            guard reply.roundTrip <= maxRoundTripNs, let seconds = reply.data.double else { return nil }
            return PositionSample(itemTimeNs: MPVBridge.mediaNanoseconds(seconds), hostTimeNs: reply.midpoint)
        }
    }

    /// Connects to mpv, then coordinates it with the group through the agent (reconnecting when
    /// the agent restarts) until mpv closes its IPC socket. Throws if mpv cannot be reached
    /// (``MPVError/cannotConnect(socketPath:reason:)``); waits for an agent that is not running.
    public func runSession() async throws {
        let mpv = try await MPVConnection.connect(socketPath: options.mpvSocket, clock: clock)
        defer { Task { await mpv.close() } }
        let o = options, logger = self.logger, clock = self.clock, kept = self.calibration
        var calibrated = kept.withLock { $0 } ?? StartLatencyCalibration(configuration: o.policy.calibration)
        if o.policy.startLatencyNs == nil, calibrated.samples.isEmpty {
            for sample in await Self.measureSeeks(mpv, count: o.calibrationSeeks, clock: clock) { calibrated.record(sample) }
            logger.info("start latency calibrated", metadata: Self.metadata(calibrated))
        }
        let initial = calibrated
        let declared = o.policy.startLatencyNs ?? initial.startLatencyNs

        let (messages, sink) = AsyncStream<Message>.makeStream()
        let session = Session(
            mpv: mpv, reader: PositionReader(mpv: mpv, maxRoundTripNs: o.maxReadingRoundTripNs),
            policy: Locked(MPVBridgePolicy(configuration: o.policy, calibration: initial)),
            messages: messages, sink: sink, options: o, logger: logger, clock: clock, kept: kept)
        var configuration = PlaybackCoordinator.Configuration(
            name: o.name, socketPath: o.agentSocket, capabilities: PlayerCapabilities(rate: true, exactSeek: true, startAtHostTime: true),
            outputLatencyNs: o.outputLatencyNs, startLatencyNs: declared, syncToleranceNs: o.syncToleranceNs)
        configuration.reportIntervalNs = o.reportIntervalNs
        let coordinator = PlaybackCoordinator(
            delegate: Player(sink: sink, reader: session.reader, policy: session.policy, clock: clock), configuration: configuration, clock: clock)
        let waiting = Task {
            try await Task.sleep(nanoseconds: 1_000_000_000)
            logger.warning("no agent yet: waiting for it", metadata: ["agent.socket": "\(o.agentSocket)"])
        }
        defer { waiting.cancel() }
        // Until connected, mpv closing ends the session too (the coordinator waits for an agent).
        try await withThrowingTaskGroup(of: Void.self) { race in
            race.addTask { await mpv.waitUntilClosed() }
            race.addTask {
                try await coordinator.run { coordinator in
                    waiting.cancel()
                    logger.info("connected", metadata: [
                        "mpv.socket": "\(o.mpvSocket)", "agent.socket": "\(o.agentSocket)", "start_latency_ms": "\(Self.ms(declared))",
                    ])
                    try await session.run(coordinator)
                }
            }
            defer { race.cancelAll() }
            try await race.next()
        }
    }

    /// One connection to mpv, coordinated with the group: what the session's tasks share.
    private struct Session: Sendable {
        let mpv: MPVConnection
        let reader: PositionReader
        /// The policy as of the last input handled (the loop owns the working copy).
        let policy: Locked<MPVBridgePolicy>
        let messages: AsyncStream<Message>
        let sink: AsyncStream<Message>.Continuation
        let options: Options
        let logger: Logger
        let clock: any HostClock
        /// The calibration kept for the next session.
        let kept: Locked<StartLatencyCalibration?>

        /// Once the coordinator is connected: mpv's events, the coordinator's commands and news,
        /// the timer and the readings go to the policy one at a time, and its actions are carried
        /// out in order, until mpv closes.
        func run(_ coordinator: PlaybackCoordinator) async throws {
            let (mpv, sink, shared, o) = (self.mpv, self.sink, self.policy, self.options)
            for property in ["pause", "speed", "paused-for-cache"] { try await mpv.observe(property) }
            await MPVBridge.keepTempoFilter(mpv, logger: logger)
            if (try? await mpv.get("idle-active").bool) != true, let loaded = await MPVBridge.loadedFile(mpv) {
                sink.yield(.input(loaded))
            }
            await withTaskGroup(of: Void.self) { tasks in
                tasks.addTask { await MPVBridge.readMPV(mpv, into: sink) }
                tasks.addTask { await MPVBridge.follow(coordinator, into: sink, logger: logger) }
                tasks.addTask { await MPVBridge.keepTime(shared, clock: clock, into: sink) }
                tasks.addTask { await MPVBridge.readPositions(reader, shared, options: o, into: sink) }
                var policy = shared.withLock { $0 }
                var learnt = policy.calibration.startLatencyNs
                loop: for await message in messages {
                    let input: MPVBridgePolicy.Input
                    switch message {
                    case .input(let i): input = i
                    case .agentConnected: input = .agentConnected(currentItem: await coordinator.currentItem)
                    case .mpvClosed: break loop
                    }
                    let now = clock.now()  // once per input: the policy sees one instant
                    let actions = policy.handle(input, now: now)
                    if input != .tick || !actions.isEmpty {
                        logger.debug("decided", metadata: [
                            "host.time_us": "\(now / 1000)", "policy.input": "\(input)", "policy.actions": "\(actions)",
                        ])
                    }
                    shared.withLock { $0 = policy }
                    if policy.calibration.startLatencyNs != learnt {
                        learnt = policy.calibration.startLatencyNs
                        kept.withLock { $0 = policy.calibration }
                        logger.debug("start latency recalibrated", metadata: MPVBridge.metadata(policy.calibration))
                    }
                    for action in actions {
                        await MPVBridge.perform(action, mpv: mpv, coordinator: coordinator, osdMs: o.policy.osdDurationMs, logger: logger)
                    }
                }
                tasks.cancelAll()
                sink.finish()
                kept.withLock { $0 = policy.calibration }
            }
        }
    }

    /// mpv inserts its tempo filter when the speed leaves 1 and removes it when it comes back,
    /// and each time the audio jumps by a few milliseconds (measured with mpv 0.35.1: a 1%
    /// nudge for 0.5 s moved the position 10 ms instead of 5). With the filter always in the
    /// chain a nudge moves it by exactly its integral, so the bridge adds `scaletempo2` (mpv's
    /// own default for speed changes) unless a tempo filter is there or pitch correction is off.
    private static func keepTempoFilter(_ mpv: MPVConnection, logger: Logger) async {
        guard (try? await mpv.get("audio-pitch-correction").bool) != false else { return }
        let filters = (try? await mpv.get("af").array) ?? []
        let names = filters.compactMap { $0.object?["name"]?.string }
        guard !names.contains(where: { ["scaletempo", "scaletempo2", "rubberband"].contains($0) }) else { return }
        do {
            try await mpv.command("af", "add", "scaletempo2")
        } catch {
            logger.warning("could not add the scaletempo2 audio filter: speed corrections will be less precise", metadata: ["error": "\(error)"])
        }
    }

    /// Measures what an exact seek costs this mpv with its file: `count` paused exact seeks
    /// spread over the file (not on keyframes: a frame a third of a second past each tenth), each
    /// from the written command to mpv's `playback-restart`, then back to where it was. Only an
    /// mpv that is paused with a seekable file loaded is measured (a playing one is the user's
    /// to watch); waits up to 3 s for a file being loaded. Empty if nothing could be measured.
    static func measureSeeks(_ mpv: MPVConnection, count: Int, clock: any HostClock) async -> [Int64] {
        guard count > 0 else { return [] }
        var duration: Double?
        for _ in 0..<150 {
            if (try? await mpv.get("idle-active").bool) == true { return [] }
            if let d = (try? await mpv.get("duration").double).flatMap({ $0 }) { duration = d; break }
            try? await Task.sleep(nanoseconds: 20_000_000)
        }
        guard let duration, duration > 2, (try? await mpv.get("pause").bool) == true,
              (try? await mpv.get("seekable").bool) == true else { return [] }
        let back = (try? await mpv.get("time-pos").double).flatMap { $0 } ?? 0
        var samples: [Int64] = []
        for i in 0...count {
            let target = i == count ? back : (duration - 1) * Double(i + 1) / Double(count + 1) + 0.33
            let sent = clock.now()
            guard (try? await mpv.send(["seek", .double(target), "absolute+exact"]))?.succeeded == true,
                  let restart = await mpv.nextEvent(timeout: 2, where: { $0.name == "playback-restart" }) else { break }
            if i < count { samples.append(restart.receivedAt - sent) }
        }
        return samples
    }

    private static func ms(_ ns: Int64) -> String { String(format: "%.1f", Double(ns) / 1e6) }

    private static func metadata(_ c: StartLatencyCalibration) -> Logger.Metadata {
        [
            "start_latency_ms": "\(ms(c.startLatencyNs))", "seeks.measured": "\(c.samples.count)",
            "seeks.p95_ms": "\(c.p95Ns.map(ms) ?? "-")",
        ]
    }

    // MARK: - Sources

    /// The file mpv has loaded: its URL, or its absolute path (mpv reports a relative path as
    /// given, relative to mpv's own working directory). Nil when nothing is loaded.
    public static func loadedPath(_ mpv: MPVConnection) async -> String? {
        guard let path = try? await mpv.get("path").string else { return nil }
        if isAbsolute(path) { return path }
        return absolute(path, in: (try? await mpv.get("working-directory").string) ?? FileManager.default.currentDirectoryPath)
    }

    /// A URL as it is, a path made absolute against `directory`: how the bridge names an item.
    public static func absolute(_ path: String, in directory: String = FileManager.default.currentDirectoryPath) -> String {
        if isAbsolute(path) { return path }
        return URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: directory, isDirectory: true)).standardizedFileURL.path
    }

    private static func isAbsolute(_ path: String) -> Bool { path.contains("://") || path.hasPrefix("/") }

    /// A time mpv reports (a position or a duration, in seconds) as media nanoseconds, clamped to
    /// the media range (0 … 1 year): mpv's times are input from outside, and a broken file can
    /// report anything (streams start below zero).
    static func mediaNanoseconds(_ seconds: Double) -> Int64 {
        MediaPosition(clamping: Int64(saturating: (seconds * 1e9).rounded())).ns
    }

    /// The loaded file as an input: its absolute path (or URL), duration and title.
    private static func loadedFile(_ mpv: MPVConnection) async -> MPVBridgePolicy.Input? {
        guard let path = await loadedPath(mpv) else { return nil }
        let duration = (try? await mpv.get("duration").double).flatMap { $0 }.map(mediaNanoseconds)
        let title = try? await mpv.get("media-title").string
        return .fileLoaded(path: path, durationNs: duration, title: title)
    }

    private static func readMPV(_ mpv: MPVConnection, into sink: AsyncStream<Message>.Continuation) async {
        for await event in mpv.events {
            switch event.name {
            case "property-change":
                switch (event.propertyName, event.data) {
                case ("pause", .bool(let b)?): sink.yield(.input(.pause(b)))
                case ("speed", let v?): if let s = v.double { sink.yield(.input(.speed(s))) }
                case ("paused-for-cache", .bool(let b)?): sink.yield(.input(.pausedForCache(b)))
                default: break
                }
            case "file-loaded":
                if let loaded = await loadedFile(mpv) { sink.yield(.input(loaded)) }
            case "end-file":
                if event.reason != "redirect" { sink.yield(.input(.fileEnded)) }
            case "seek":
                sink.yield(.input(.seekStarted))
            case "playback-restart":
                let position = (try? await mpv.get("time-pos").double).flatMap { $0 }.map(mediaNanoseconds)
                sink.yield(.input(.playbackRestarted(positionNs: position)))
            default:
                break
            }
        }
        if !Task.isCancelled { sink.yield(.mpvClosed) }
    }

    /// The coordinator's news: the group's item (for the OSD), the connection, group playback
    /// and suspensions (logged).
    private static func follow(_ coordinator: PlaybackCoordinator, into sink: AsyncStream<Message>.Continuation, logger: Logger) async {
        for await change in await coordinator.changes() {
            switch change {
            case .itemProposed(let item): sink.yield(.input(.itemProposed(item)))
            case .connection(let up):
                if up {
                    logger.info("connected to the agent again")
                    sink.yield(.agentConnected)
                } else {
                    logger.warning("the agent closed the connection; reconnecting")
                }
            case .groupPlayback(let active, let reason):
                logger.info(active ? "in group playback" : "out of group playback", metadata: ["group.reason": "\(reason)"])
            case .suspension(let e):
                logger.info("suspension", metadata: [
                    "suspension.change": "\(e.change)", "suspension.reason": "\(e.reason)", "suspension.by": "\(e.by)",
                ])
            case .participants, .concurrentCommands:
                break
            }
        }
    }

    /// Ticks at the policy's deadlines, exactly: sleeps until a millisecond before, then spins.
    /// Between deadlines it ticks every 5 ms, so a deadline set meanwhile is seen in time
    /// (the policy never sets one sooner than ``MPVBridgePolicy/Configuration/minimumLeadNs``,
    /// 10 ms). Sleeps are real time: `clock`
    /// must run at the real pace (a manual clock is moved by its test).
    private static func keepTime(_ shared: Locked<MPVBridgePolicy>, clock: any HostClock, into sink: AsyncStream<Message>.Continuation) async {
        let idle = 5 * Nanos.millisecond, spin = Nanos.millisecond
        while !Task.isCancelled {
            let now = clock.now()
            let deadline = shared.withLock { $0.nextDeadline }
            let target = min(deadline ?? .max, now + idle)
            let exact = target == deadline
            let sleep = target - now - (exact ? spin : 0)
            if sleep > 0 { try? await Task.sleep(nanoseconds: UInt64(sleep)) }
            if exact { while clock.now() < target, !Task.isCancelled {} }
            sink.yield(.input(.tick))
        }
    }

    /// Reads the position for the policy while it wants readings the coordinator does not take
    /// (``MPVBridgePolicy/wantsOwnPositions``): every ``Options/reportIntervalNs``, every
    /// ``Options/urgentReportIntervalNs`` when it wants them soon.
    private static func readPositions(_ reader: PositionReader, _ shared: Locked<MPVBridgePolicy>, options: Options, into sink: AsyncStream<Message>.Continuation) async {
        var lastRead: Int64?
        let step = min(options.urgentReportIntervalNs, options.reportIntervalNs)
        while !Task.isCancelled {
            try? await Task.sleep(nanoseconds: UInt64(max(step, Nanos.millisecond)))
            let (wanted, soon) = shared.withLock { ($0.wantsOwnPositions, $0.wantsPositionsSoon) }
            let now = reader.mpv.clock.now()
            guard wanted, soon || lastRead.map({ now - $0 >= options.reportIntervalNs - step / 2 }) ?? true else { continue }
            lastRead = now
            if let sample = await reader.read() { sink.yield(.input(.position(sample.itemTimeNs, at: sample.hostTimeNs))) }
        }
    }

    // MARK: - Actions

    private static func perform(_ action: MPVBridgePolicy.Action, mpv: MPVConnection, coordinator: PlaybackCoordinator, osdMs: Int, logger: Logger) async {
        do {
            switch action {
            case .setPause(let p): try await mpv.set("pause", .bool(p))
            case .setSpeed(let s): try await mpv.set("speed", .double(s))
            case .seek(let p): try await mpv.command("seek", .double(Double(p) / 1e9), "absolute+exact")
            case .showText(let text):
                logger.info("shown on mpv's OSD", metadata: ["osd.text": "\(text)"])
                try await mpv.command("show-text", .string(text), .int(Int64(osdMs)))
            case .load(let r):
                let outcome = try await coordinator.transition(toItem: r.item, share: r.share ?? .group, title: r.title, artworkURL: r.artworkURL, durationNs: r.durationNs)
                logger.info("item loaded on the agent", metadata: ["item.id": "\(r.item)", "item.outcome": "\(outcome)"])
            case .unload: try await coordinator.leaveItem()
            case .ready: try await coordinator.setReady()
            case .buffering: try await coordinator.setReady(false)
            case .intent(let intent):
                logger.info("your change goes to the group", metadata: Self.metadata(intent))
                switch intent.action {
                case .play: if let rate = intent.rate { try await coordinator.coordinateRateChange(to: rate) } else { try await coordinator.coordinatePlay() }
                case .pause: try await coordinator.coordinatePause()
                case .seek: try await coordinator.coordinateSeek(to: intent.positionNs ?? 0)
                case .rate: try await coordinator.coordinateSpeedChange(to: intent.rate ?? 1)
                }
            case .declareStartLatency(let ns):
                try await coordinator.updateStartLatency(ns)
                logger.info("start latency declared", metadata: ["start_latency_ms": "\(ms(ns))"])
            }
        } catch LockstepClient.Failure.disconnected {
            // The agent went away: the coordinator reconnects and says so; no line per lost action.
        } catch MPVError.disconnected {
            // mpv went away: likewise.
        } catch {
            logger.warning("action failed", metadata: ["bridge.action": "\(action)", "error": "\(error)"])
        }
    }

    private static func metadata(_ intent: IntentRequest) -> Logger.Metadata {
        var m: Logger.Metadata = ["intent.action": "\(intent.action)"]
        if let p = intent.positionNs { m["intent.position_s"] = "\(String(format: "%.3f", Double(p) / 1e9))" }
        if let r = intent.rate { m["intent.rate"] = "\(r)" }
        return m
    }
}
