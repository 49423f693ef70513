import LockstepPlayerProtocol
import NIOCore
import NIOPosix

/// Coordinates one player with the group through the local agent: SharePlay's
/// `AVDelegatingPlaybackCoordinator` and `GroupSession` for Lockstep's player socket.
///
/// It speaks the protocol so the player does not: it says hello with the player's capabilities
/// and latencies, loads its item, turns the agent's events into typed commands for the player's
/// ``PlayerDelegate`` (one at a time, in order), reads the player's clock and reports its position
/// while the group plays, applies the agent's drift corrections (a rate nudge, undone when it
/// ends, or a seek, per the capabilities declared), and reconnects when the agent restarts,
/// restoring the item, the readiness and the open suspensions. The decisions are
/// ``CoordinatorPolicy``'s; this actor only moves messages.
///
/// It runs on one NIO event loop (its executor, ``eventLoop``), the one its connection reads
/// on: an event from the agent is handled on the thread that read it, and its command goes to
/// the delegate from there. A delegate actor that runs on the same loop (its `unownedExecutor`,
/// as ``Configuration/eventLoop`` lets it choose) is called without any thread hop; another is
/// called on its own executor, as any actor is.
///
///     actor Player: PlayerDelegate {                   // a player whose media clock is CLOCK_MONOTONIC
///         var anchor = (item: Int64(0), host: Int64(0)), rate = 0.0
///
///         func play(_ c: PlayCommand) {                // present c.itemTimeNs at c.hostTimeNs, at c.rate
///             anchor = (c.itemTimeNs, c.hostTimeNs)
///             rate = c.rate
///         }
///
///         func pause(_ c: PauseCommand) {              // stop at c.itemTimeNs from c.hostTimeNs
///             anchor = (c.itemTimeNs, c.hostTimeNs)
///             rate = 0
///         }
///
///         func currentPosition() -> PositionSample? {  // the player's own clock, read now
///             let now = MonotonicClock.read()
///             return PositionSample(itemTimeNs: anchor.item + Int64(Double(max(0, now - anchor.host)) * rate), hostTimeNs: now)
///         }
///     }
///
///     let coordinator = PlaybackCoordinator(delegate: Player(), name: "my player",
///         capabilities: PlayerCapabilities(exactSeek: true, startAtHostTime: true), startLatencyNs: 50_000_000)
///     try await coordinator.run { coordinator in                // connects; reconnects by itself
///         try await coordinator.transition(toItem: "file:///films/night.mkv")
///         try await coordinator.setReady()                      // loaded: the group may start
///         try await coordinator.coordinateRateChange(to: 1)     // the user pressed play: for everyone
///         for await change in await coordinator.changes() {     // participants, the group's item, …
///             if case .participants(let all) = change { print("with", all.filter { !$0.isMe }.map(\.name)) }
///         }
///     }
public actor PlaybackCoordinator {
    /// Who the player is to the agent.
    public struct Configuration: Sendable {
        public var name: String
        public var socketPath: String
        public var capabilities: PlayerCapabilities
        /// Nil: the agent's default (or the latency it keeps for this player's name).
        public var outputLatencyNs: Int64?
        public var startLatencyNs: Int64?
        public var syncToleranceNs: Int64?
        public var reportIntervalNs: Int64 = 100_000_000
        public var reconnectIntervalNs: Int64 = 200_000_000
        /// The event loop the coordinator runs on (its executor, its connections and its timer);
        /// nil: one of NIO's shared loops. A delegate actor with this loop as its executor is
        /// called on it directly.
        public var eventLoop: (any EventLoop)?

        public init(name: String, socketPath: String = PlayerProtocol.defaultSocketPath(), capabilities: PlayerCapabilities = PlayerCapabilities(), outputLatencyNs: Int64? = nil, startLatencyNs: Int64? = nil, syncToleranceNs: Int64? = nil) {
            self.name = name
            self.socketPath = socketPath
            self.capabilities = capabilities
            self.outputLatencyNs = outputLatencyNs
            self.startLatencyNs = startLatencyNs
            self.syncToleranceNs = syncToleranceNs
        }
    }

    /// What to restore after the agent restarted.
    private struct Loaded {
        var request: LoadRequest
        var ready = false
    }

    /// A step for the player, issued in order by one task.
    private enum Step {
        case command(PlayerCommand, generation: UInt64)
        case rate(Double)
    }

    public let configuration: Configuration
    public nonisolated let delegate: any PlayerDelegate
    public nonisolated let clock: any HostClock
    /// The event loop this coordinator runs on: its executor, and where its connection reads.
    public nonisolated let eventLoop: any EventLoop
    public nonisolated var unownedExecutor: UnownedSerialExecutor { eventLoop.executor.asUnownedSerialExecutor() }

    /// This player's id on its agent (nil until connected).
    public private(set) var playerID: UInt32?
    /// Every player on this player's item, this one included (``Participant/isMe``).
    public private(set) var participants: [Participant] = []
    /// The group's item as last proposed.
    public private(set) var groupItem: GroupItem?
    /// Connected to the agent, hello said and item restored.
    public private(set) var isConnected = false
    /// The start latency declared at each hello: the configuration's, until
    /// ``updateStartLatency(_:)`` changes it.
    public private(set) var startLatencyNs: Int64?

    private var policy: CoordinatorPolicy
    private var client: LockstepClient?
    private var loaded: Loaded?
    /// Open suspensions: this side's key → the agent's id (which changes when the agent restarts).
    private var suspensions: [Int: (reason: String, id: UInt32)] = [:]
    private var nextSuspensionKey = 0
    private var watchers: [Int: AsyncStream<CoordinatorChange>.Continuation] = [:]
    private var nextWatcher = 0
    private var connectedWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
    private var nextConnectedWaiter = 0
    private let steps: AsyncStream<Step>.Continuation
    private let stepStream: AsyncStream<Step>
    /// Events read before hello and the item's restoring finished: handled after, in order.
    private var early: [LockstepClient.Event]? = []
    /// The policy's next wake-up on the loop's timer, and the tick task waiting to be cancelled.
    private var tickTimer: Scheduled<Void>?
    private var tickStopped: CheckedContinuation<Void, Never>?

    public init(delegate: any PlayerDelegate, configuration: Configuration, clock: any HostClock = MonotonicClock()) {
        self.delegate = delegate
        self.configuration = configuration
        self.startLatencyNs = configuration.startLatencyNs
        self.clock = clock
        self.eventLoop = configuration.eventLoop ?? MultiThreadedEventLoopGroup.singleton.next()
        self.policy = CoordinatorPolicy(capabilities: configuration.capabilities, reportIntervalNs: configuration.reportIntervalNs)
        (stepStream, steps) = AsyncStream<Step>.makeStream()
    }

    public init(delegate: any PlayerDelegate, name: String, socketPath: String = PlayerProtocol.defaultSocketPath(), capabilities: PlayerCapabilities = PlayerCapabilities(), outputLatencyNs: Int64? = nil, startLatencyNs: Int64? = nil) {
        self.init(delegate: delegate, configuration: Configuration(name: name, socketPath: socketPath, capabilities: capabilities, outputLatencyNs: outputLatencyNs, startLatencyNs: startLatencyNs))
    }

    // MARK: Life cycle

    /// Connects (and keeps reconnecting), runs `body` once connected, then leaves: the
    /// connection closes and the agent unloads the player. Cancelled while no agent answers, it
    /// throws `CancellationError` without running `body`.
    public func run<T: Sendable>(_ body: @Sendable (PlaybackCoordinator) async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { await self.supervise() }
            tasks.addTask { await self.issue() }
            tasks.addTask { await self.tick() }
            defer { tasks.cancelAll() }
            await waitConnected()
            try Task.checkCancellation()
            return try await body(self)
        }
    }

    /// Suspends until connected to the agent (with the item restored after a restart), or until
    /// the task is cancelled.
    public func waitConnected() async {
        if isConnected { return }
        let key = nextConnectedWaiter
        nextConnectedWaiter += 1
        await withTaskCancellationHandler {
            await withCheckedContinuation { waiter in
                // Cancelled before this ran: the handler found nothing to resume.
                if Task.isCancelled { return waiter.resume() }
                connectedWaiters[key] = waiter
            }
        } onCancel: {
            Task { await self.stopWaiting(key) }
        }
    }

    private func stopWaiting(_ key: Int) {
        connectedWaiters.removeValue(forKey: key)?.resume()
    }

    /// The changes the app may show, from now on, for as long as it iterates.
    public func changes() -> AsyncStream<CoordinatorChange> {
        let (stream, sink) = AsyncStream<CoordinatorChange>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let key = nextWatcher
        nextWatcher += 1
        watchers[key] = sink
        sink.onTermination = { _ in Task { await self.unwatch(key) } }
        return stream
    }

    // MARK: What the app reads

    /// The participants on this item other than this player.
    public var otherParticipants: [Participant] { participants.filter { !$0.isMe } }
    /// The item this player has loaded.
    public var currentItem: String? { loaded?.request.item }
    /// Whether this player follows the group's timeline now.
    public var inGroupPlayback: Bool { policy.inGroupPlayback }
    /// The last timed command issued (play, pause or buffer).
    public var lastCommand: PlayerCommand? { policy.lastCommand }
    /// The reasons of this player's open suspensions.
    public var suspensionReasons: [String] { suspensions.keys.sorted().compactMap { suspensions[$0]?.reason } }

    /// The agent's view of this player: item, readiness, group playback, timeline, participants.
    public func playbackStatus() async throws -> PlaybackStatus {
        try await request("playback_status")
    }

    // MARK: What the app asks

    /// Loads an item: with the group (adopt its timeline for the item, or propose the item to the
    /// group) or ``Share/solo`` ("play for me only"). The player is `loading` until ``setReady(_:)``.
    @discardableResult
    public func transition(toItem identifier: String, share: Share = .group, title: String? = nil, artworkURL: String? = nil, durationNs: Int64? = nil) async throws -> LoadOutcomeName {
        let load = LoadRequest(item: identifier, share: share, title: title, artworkURL: artworkURL, durationNs: durationNs)
        let result: LoadResult = try await request("load", load)
        loaded = Loaded(request: load)
        return result.outcome
    }

    /// Loads the group's current item (what ``CoordinatorChange/itemProposed(_:)`` announced); returns it.
    @discardableResult
    public func joinGroup() async throws -> String {
        let result: LoadResult = try await request("join_group")
        loaded = Loaded(request: LoadRequest(item: result.item, share: .group))
        return result.item
    }

    /// Unloads the item (and leaves group playback).
    public func leaveItem() async throws {
        let _: EmptyResult = try await request("unload")
        loaded = nil
    }

    /// The player can play its item at once (`true`) or is refilling its buffer. The group
    /// waits for every participant to be ready before it starts.
    public func setReady(_ ready: Bool = true) async throws {
        let _: EmptyResult = try await request(ready ? "ready" : "buffering")
        loaded?.ready = ready
    }

    /// The user pressed play (`rate` > 0) or pause (0) in this player: for every player on the
    /// item. Act on the command that follows, not on the press.
    public func coordinateRateChange(to rate: Double) async throws {
        let intent = rate == 0 ? IntentRequest(action: .pause) : IntentRequest(action: .play, rate: rate)
        let _: EmptyResult = try await request("intent", intent)
    }

    /// `coordinateRateChange(to: 1)`, keeping the group's rate.
    public func coordinatePlay() async throws {
        let _: EmptyResult = try await request("intent", IntentRequest(action: .play))
    }

    /// `coordinateRateChange(to: 0)`.
    public func coordinatePause() async throws {
        try await coordinateRateChange(to: 0)
    }

    /// The user changed the playback speed (not play or pause: a paused group stays paused):
    /// the group's rate becomes `rate`.
    public func coordinateSpeedChange(to rate: Double) async throws {
        let _: EmptyResult = try await request("intent", IntentRequest(action: .rate, rate: rate))
    }

    /// The user sought to `itemTimeNs`: the whole group moves there.
    public func coordinateSeek(to itemTimeNs: Int64) async throws {
        let _: EmptyResult = try await request("intent", IntentRequest(action: .seek, positionNs: itemTimeNs))
    }

    /// Starts now without waiting for participants that are not ready (they may miss the start).
    public func playImmediately(atRate rate: Double? = nil) async throws {
        let _: EmptyResult = try await request("play_immediately", PlayImmediatelyRequest(rate: rate))
    }

    /// Leaves group playback for a while (a stall, an interruption, the user scrubbing…); end it
    /// with ``Suspension/end(proposingNewTime:)``. Reasons the agents list in `--waiting-reasons`
    /// make the group wait instead.
    public func beginSuspension(for reason: String) async throws -> Suspension {
        let result: BeginSuspensionResult = try await request("begin_suspension", BeginSuspensionRequest(reason: reason))
        let key = nextSuspensionKey
        nextSuspensionKey += 1
        suspensions[key] = (reason, result.suspensionID)
        policy.onSuspensions(open: suspensions.count)
        return Suspension(coordinator: self, key: key, reason: reason)
    }

    func endSuspension(key: Int, proposingNewTime: Int64?) async throws {
        guard let s = suspensions[key] else { return }
        let _: EmptyResult = try await request("end_suspension", EndSuspensionRequest(suspensionID: s.id, proposePositionNs: proposingNewTime))
        suspensions[key] = nil
        policy.onSuspensions(open: suspensions.count)
    }

    func isOpen(suspension key: Int) -> Bool { suspensions[key] != nil }

    /// Has the agent keep `outputLatencyNs` (0 to 10 s) for this player's name, or forget it
    /// (nil): from the next connection on, a hello without an output latency gets it (this
    /// coordinator's own, if configured, wins). Returns every latency the agent keeps.
    @discardableResult
    public func saveOutputLatency(_ outputLatencyNs: Int64?) async throws -> [SavedLatency] {
        let r: LatencyListResult = try await request("latency_set", LatencySetRequest(name: configuration.name, outputLatencyNs: outputLatencyNs))
        return r.latencies
    }

    /// Declares a new start latency (0 to 10 s): the player measured itself, or what its next
    /// start needs changed. Sent at once when connected (`start_latency`), and at every later
    /// hello. An agent older than the request answers `unknown_type`, which is thrown; the
    /// value is still declared at the next connection.
    public func updateStartLatency(_ startLatencyNs: Int64) async throws {
        guard PlayerLimits.latencyNs.contains(startLatencyNs) else {
            throw ProtocolError(.invalidField, "start_latency_ns must be within \(PlayerLimits.latencyNs.lowerBound)...\(PlayerLimits.latencyNs.upperBound), not \(startLatencyNs)")
        }
        self.startLatencyNs = startLatencyNs
        guard isConnected else { return }
        let _: EmptyResult = try await request("start_latency", StartLatencyRequest(startLatencyNs: startLatencyNs))
    }

    // MARK: Inside

    private func request<R: Decodable & Sendable>(_ type: String, _ params: some Encodable & Sendable = EmptyResult()) async throws -> R {
        guard let client, isConnected else { throw LockstepClient.Failure.disconnected }
        return try await client.request(type, params)
    }

    /// Connects, says hello, restores what the player had, follows the events, and starts over
    /// when the agent goes.
    private func supervise() async {
        while !Task.isCancelled {
            do {
                // Events are handled as the loop reads them (it is this actor's executor).
                let onEvent: @Sendable (LockstepClient.Event) -> Void = { [self] event in self.assumeIsolated { $0.received(event) } }
                try await LockstepClient.withConnection(socketPath: configuration.socketPath, group: eventLoop, onEvent: onEvent) { @Sendable client in
                    try await self.hello(client)
                    for await _ in client.events {}
                }
            } catch {
                // Not running, restarting, or refused: try again shortly.
            }
            disconnected()
            try? await Task.sleep(nanoseconds: UInt64(max(1_000_000, configuration.reconnectIntervalNs)))
        }
    }

    private func hello(_ client: LockstepClient) async throws {
        let c = configuration
        let hello = HelloRequest(role: .player, name: c.name, capabilities: c.capabilities, outputLatencyNs: c.outputLatencyNs, startLatencyNs: startLatencyNs, syncToleranceNs: c.syncToleranceNs)
        let result: HelloResult = try await client.request("hello", hello)
        playerID = result.playerID
        self.client = client
        if let loaded {
            let _: LoadResult = try await client.request("load", loaded.request)
            if loaded.ready { let _: EmptyResult = try await client.request("ready") }
            for key in suspensions.keys.sorted() {
                guard let s = suspensions[key] else { continue }
                let r: BeginSuspensionResult = try await client.request("begin_suspension", BeginSuspensionRequest(reason: s.reason))
                suspensions[key] = (s.reason, r.suspensionID)
            }
        }
        isConnected = true
        for waiter in connectedWaiters.values { waiter.resume() }
        connectedWaiters = [:]
        emit(.connection(true))
        let first = early ?? []
        early = nil
        for event in first { on(event) }
    }

    /// An event as the connection read it: handled now, or once hello and the restoring are done.
    private func received(_ event: LockstepClient.Event) {
        if early != nil { early?.append(event) } else { on(event) }
    }

    private func disconnected() {
        let was = isConnected
        isConnected = false
        early = []
        client = nil
        participants = []
        policy.onDisconnected()
        if was { emit(.connection(false)) }
    }

    private func on(_ event: LockstepClient.Event) {
        let now = clock.now()
        switch event.name {
        case "timeline":
            if let e = try? event.decode(TimelineEvent.self) { perform(policy.onTimeline(e, now: now)) }
        case "wait":
            if let e = try? event.decode(WaitEvent.self) { perform(policy.onWait(e, now: now)) }
        case "correction":
            if let e = try? event.decode(CorrectionEvent.self) { perform(policy.onCorrection(e, now: now)) }
        case "group_playback":
            guard let e = try? event.decode(GroupPlaybackEvent.self) else { return }
            perform(policy.onGroupPlayback(active: e.active, now: now))
            emit(.groupPlayback(active: e.active, reason: e.reason))
        case "participants":
            guard let e = try? event.decode(ParticipantsEvent.self) else { return }
            participants = e.participants.map { Participant($0, myPlayerID: playerID) }
            emit(.participants(participants))
        case "item_proposed":
            guard let e = try? event.decode(ItemProposedEvent.self) else { return }
            groupItem = GroupItem(item: e.item, title: e.title, artworkURL: e.artworkURL, durationNs: e.durationNs, originator: e.origin)
            emit(.itemProposed(groupItem!))
        case "suspension":
            guard let e = try? event.decode(SuspensionEvent.self) else { return }
            if e.change == .ended, let key = suspensions.first(where: { $0.value.id == e.suspensionID })?.key {
                suspensions[key] = nil
                policy.onSuspensions(open: suspensions.count)
            }
            emit(.suspension(e))
        case "concurrent_commands":
            guard let e = try? event.decode(ConcurrentCommandsEvent.self) else { return }
            emit(.concurrentCommands(e.commands.map(\.origin)))
        default:
            break
        }
    }

    private func perform(_ directives: [CoordinatorPolicy.Directive]) {
        for d in directives {
            switch d {
            case .issue(let command, let generation): steps.yield(.command(command, generation: generation))
            case .setRate(let rate): steps.yield(.rate(rate))
            case .reportPosition: Task { await self.report() }
            }
        }
    }

    private func emit(_ change: CoordinatorChange) {
        for w in watchers.values { w.yield(change) }
    }

    private func unwatch(_ key: Int) { watchers[key] = nil }

    /// Issues the delegate's commands one at a time: each completes before the next.
    private func issue() async {
        for await step in stepStream {
            if Task.isCancelled { return }
            switch step {
            case .command(let command, let generation):
                guard policy.isLatest(generation) else { continue }
                switch command {
                case .play(let c): await delegate.play(c)
                case .pause(let c): await delegate.pause(c)
                case .buffer(let c): await delegate.buffer(c)
                case .seek(let c): await delegate.seek(c)
                }
            case .rate(let rate):
                await delegate.setRate(rate)
            }
        }
    }

    /// Ticks the policy at its wake-ups (ends nudges on time, reports positions) until cancelled,
    /// on the loop's own timer: a task's sleep went through Dispatch's timer and the concurrency
    /// pool before reaching this actor, threads woken for every report (docs/scale.md,
    /// twenty-fifth step).
    private func tick() async {
        onTickTimer()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (stopped: CheckedContinuation<Void, Never>) in
                tickStopped = stopped
                if Task.isCancelled { stopTicking() }
            }
        } onCancel: {
            Task { await self.stopTicking() }
        }
    }

    private func onTickTimer() {
        let now = clock.now()
        perform(policy.onTick(now: now))
        let wake = policy.nextWakeUp(now: now)
        let delay = min(max(0, wake &- now), configuration.reportIntervalNs)
        tickTimer = eventLoop.scheduleTask(in: .nanoseconds(max(500_000, delay))) { [self] in
            self.assumeIsolated { $0.onTickTimer() }
        }
    }

    private func stopTicking() {
        tickTimer?.cancel()
        tickTimer = nil
        tickStopped?.resume()
        tickStopped = nil
    }

    private func report() async {
        defer { policy.onReported(now: clock.now()) }
        guard let client, let sample = await delegate.currentPosition() else { return }
        let report = PositionReport(positionNs: min(max(0, sample.itemTimeNs), PlayerLimits.positionNs.upperBound), hostTimeNs: sample.hostTimeNs)
        try? await client.notify("position", report)
    }
}
