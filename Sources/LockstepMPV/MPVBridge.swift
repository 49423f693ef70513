import Foundation
import LockstepClient
import LockstepCore
import LockstepPlayerProtocol
import Logging
import Synchronization

/// `lockstep mpv`'s shell: one mpv (its JSON IPC socket) and the local agent (its player
/// socket), with ``MPVBridgePolicy`` deciding everything. It observes mpv's `pause`, `speed` and
/// `paused-for-cache`, its `file-loaded`, `end-file`, `seek` and `playback-restart` events, reads
/// `audio-pts` ten times a second with host timestamps, and carries out the policy's actions on
/// time (an unpause at an anchor is written within a few microseconds of its host time: the
/// last millisecond is waited out by spinning, not sleeping).
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
        /// How often the position is read while playing.
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

    /// Why a session ended.
    public enum End: Sendable, Equatable, CustomStringConvertible {
        case mpvClosed
        case agentClosed

        public var description: String {
            switch self {
            case .mpvClosed: "mpv closed its IPC socket"
            case .agentClosed: "the agent closed the connection"
            }
        }
    }

    public let options: Options
    /// Host time: the policy's `now`, the timer's deadlines and the readings' stamps.
    public let clock: any HostClock
    private let logger: Logger
    /// What this mpv's seeks cost, kept from one session to the next (a reconnection to the
    /// agent declares what the last session learnt).
    private let calibration = Locked<StartLatencyCalibration?>(nil)

    public init(options: Options, logger: Logger, clock: any HostClock = MonotonicClock()) {
        self.options = options
        self.logger = logger
        self.clock = clock
    }

    private enum Message: Sendable {
        case input(MPVBridgePolicy.Input)
        case ended(End)
    }

    /// What the timer and the poller need to know of the policy.
    private struct Shared: Sendable {
        var deadline: Int64?
        var wantsPositions = false
        var wantsPositionsSoon = false
    }

    /// A value shared between the session's tasks (and sessions).
    private final class Locked<Value: Sendable>: Sendable {
        let value: Mutex<Value>
        init(_ initial: Value) { value = Mutex(initial) }
        func withLock<R: Sendable>(_ body: (inout Value) -> R) -> R { value.withLock { body(&$0) } }
    }

    /// Connects to mpv and to the agent and bridges them until one of them goes away. Throws
    /// if either cannot be reached (``MPVError/cannotConnect(socketPath:reason:)``,
    /// ``LockstepClient/Failure/agentNotRunning(socketPath:)``) or the agent refuses the player.
    public func runSession() async throws -> End {
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
        return try await LockstepClient.withConnection(socketPath: o.agentSocket) { agent in
            let hello = HelloRequest(
                role: .player, name: o.name,
                capabilities: PlayerCapabilities(rate: true, exactSeek: true, startAtHostTime: true),
                outputLatencyNs: o.outputLatencyNs, startLatencyNs: declared, syncToleranceNs: o.syncToleranceNs)
            let _: HelloResult = try await agent.request("hello", hello)
            logger.info("connected", metadata: [
                "mpv.socket": "\(o.mpvSocket)", "agent.socket": "\(o.agentSocket)", "start_latency_ms": "\(Self.ms(declared))",
            ])

            let (messages, sink) = AsyncStream<Message>.makeStream()
            let shared = Locked(Shared())
            for property in ["pause", "speed", "paused-for-cache"] { try await mpv.observe(property) }
            await Self.keepTempoFilter(mpv, logger: logger)
            if (try? await mpv.get("idle-active").bool) != true, let loaded = await Self.loadedFile(mpv) {
                sink.yield(.input(loaded))
            }

            return await withTaskGroup(of: Void.self) { tasks in
                tasks.addTask { await Self.readMPV(mpv, into: sink) }
                tasks.addTask { await Self.readAgent(agent, into: sink, logger: logger) }
                tasks.addTask { await Self.keepTime(shared, clock: clock, into: sink) }
                tasks.addTask { await Self.readPositions(mpv, shared, options: o, into: sink) }
                var policy = MPVBridgePolicy(configuration: o.policy, calibration: initial)
                var end = End.mpvClosed
                var learnt = initial.startLatencyNs
                for await message in messages {
                    guard case .input(let input) = message else {
                        if case .ended(let why) = message { end = why }
                        break
                    }
                    let now = clock.now()  // once per input: the policy sees one instant
                    let actions = policy.handle(input, now: now)
                    if input != .tick || !actions.isEmpty {
                        logger.debug("decided", metadata: [
                            "host.time_us": "\(now / 1000)", "policy.input": "\(input)", "policy.actions": "\(actions)",
                        ])
                    }
                    shared.withLock { $0 = Shared(deadline: policy.nextDeadline, wantsPositions: policy.wantsPositions, wantsPositionsSoon: policy.wantsPositionsSoon) }
                    if policy.calibration.startLatencyNs != learnt {
                        learnt = policy.calibration.startLatencyNs
                        kept.withLock { $0 = policy.calibration }
                        logger.debug("start latency recalibrated", metadata: Self.metadata(policy.calibration))
                    }
                    for action in actions {
                        await Self.perform(action, mpv: mpv, agent: agent, osdMs: o.policy.osdDurationMs, logger: logger)
                    }
                }
                tasks.cancelAll()
                sink.finish()
                kept.withLock { $0 = policy.calibration }
                return end
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
        if !Task.isCancelled { sink.yield(.ended(.mpvClosed)) }
    }

    private static func readAgent(_ agent: LockstepClient, into sink: AsyncStream<Message>.Continuation, logger: Logger) async {
        for await event in agent.events {
            do {
                switch event.name {
                case "timeline": sink.yield(.input(.timeline(try event.decode(TimelineEvent.self))))
                case "wait": sink.yield(.input(.wait(try event.decode(WaitEvent.self))))
                case "correction": sink.yield(.input(.correction(try event.decode(CorrectionEvent.self))))
                case "item_proposed": sink.yield(.input(.itemProposed(try event.decode(ItemProposedEvent.self))))
                case "group_playback":
                    let e = try event.decode(GroupPlaybackEvent.self)
                    logger.info(e.active ? "in group playback" : "out of group playback", metadata: ["group.reason": "\(e.reason)"])
                case "suspension":
                    let e = try event.decode(SuspensionEvent.self)
                    logger.info("suspension", metadata: [
                        "suspension.change": "\(e.change)", "suspension.reason": "\(e.reason)", "suspension.by": "\(e.by)",
                    ])
                default: break
                }
            } catch {
                logger.warning("agent event not understood", metadata: ["agent.event": "\(event.name)", "error": "\(error)"])
            }
        }
        if !Task.isCancelled { sink.yield(.ended(.agentClosed)) }
    }

    /// Ticks at the policy's deadlines, exactly: sleeps until a millisecond before, then spins.
    /// Between deadlines it ticks every 5 ms, so a deadline set meanwhile is seen in time
    /// (the policy never sets one sooner than ``MPVBridgePolicy/Configuration/minimumLeadNs``,
    /// 10 ms). Sleeps are real time: `clock`
    /// must run at the real pace (a manual clock is moved by its test).
    private static func keepTime(_ shared: Locked<Shared>, clock: any HostClock, into sink: AsyncStream<Message>.Continuation) async {
        let idle = 5 * Nanos.millisecond, spin = Nanos.millisecond
        while !Task.isCancelled {
            let now = clock.now()
            let deadline = shared.withLock { $0.deadline }
            let target = min(deadline ?? .max, now + idle)
            let exact = target == deadline
            let sleep = target - now - (exact ? spin : 0)
            if sleep > 0 { try? await Task.sleep(nanoseconds: UInt64(sleep)) }
            if exact { while clock.now() < target, !Task.isCancelled {} }
            sink.yield(.input(.tick))
        }
    }

    /// Reads `audio-pts` (or `time-pos` without audio) while the policy wants positions, every
    /// ``Options/reportIntervalNs`` (every ``Options/urgentReportIntervalNs`` when it wants them
    /// soon); the reading's host time is the middle of its IPC round trip.
    private static func readPositions(_ mpv: MPVConnection, _ shared: Locked<Shared>, options: Options, into sink: AsyncStream<Message>.Continuation) async {
        var property = "audio-pts"
        var lastRead: Int64?
        let step = min(options.urgentReportIntervalNs, options.reportIntervalNs)
        while !Task.isCancelled {
            try? await Task.sleep(nanoseconds: UInt64(max(step, Nanos.millisecond)))
            let (wanted, soon) = shared.withLock { ($0.wantsPositions, $0.wantsPositionsSoon) }
            let now = mpv.clock.now()
            guard wanted, soon || lastRead.map({ now - $0 >= options.reportIntervalNs - step / 2 }) ?? true else { continue }
            lastRead = now
            guard let reply = try? await mpv.send(["get_property", .string(property)]) else { continue }
            if !reply.succeeded {
                // No audio track: fall back to the coarser time-pos.
                if reply.error != "property unavailable" || property == "time-pos" { continue }
                if (try? await mpv.get("aid").bool) == false { property = "time-pos" }
                continue
            }
            guard reply.roundTrip <= options.maxReadingRoundTripNs, let seconds = reply.data.double else { continue }
            sink.yield(.input(.position(mediaNanoseconds(seconds), at: reply.midpoint)))
        }
    }

    // MARK: - Actions

    private static func perform(_ action: MPVBridgePolicy.Action, mpv: MPVConnection, agent: LockstepClient, osdMs: Int, logger: Logger) async {
        do {
            switch action {
            case .setPause(let p): try await mpv.set("pause", .bool(p))
            case .setSpeed(let s): try await mpv.set("speed", .double(s))
            case .seek(let p): try await mpv.command("seek", .double(Double(p) / 1e9), "absolute+exact")
            case .showText(let text):
                logger.info("shown on mpv's OSD", metadata: ["osd.text": "\(text)"])
                try await mpv.command("show-text", .string(text), .int(Int64(osdMs)))
            case .load(let request):
                let r: LoadResult = try await agent.request("load", request)
                logger.info("item loaded on the agent", metadata: ["item.id": "\(r.item)", "item.outcome": "\(r.outcome)"])
            case .unload: let _: EmptyResult = try await agent.request("unload")
            case .ready: let _: EmptyResult = try await agent.request("ready")
            case .buffering: let _: EmptyResult = try await agent.request("buffering")
            case .intent(let intent):
                logger.info("your change goes to the group", metadata: Self.metadata(intent))
                let _: EmptyResult = try await agent.request("intent", intent)
            case .report(let report): try await agent.notify("position", report)
            case .declareStartLatency(let ns):
                let _: EmptyResult = try await agent.request("start_latency", StartLatencyRequest(startLatencyNs: ns))
                logger.info("start latency declared", metadata: ["start_latency_ms": "\(ms(ns))"])
            }
        } catch LockstepClient.Failure.disconnected {
            // The agent went away: the session ends and says so; no line per lost action.
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
