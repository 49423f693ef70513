import LockstepPlayerProtocol

/// What a ``PlaybackCoordinator`` tells its player and when it reports, without any I/O: the
/// agent's events and the clock's ticks go in, directives come out. Time is an argument (host
/// nanoseconds), so tests drive it with a manual clock.
///
/// - Timelines and waits become timed commands; each gets a new generation, and a command whose
///   generation is no longer the latest when its turn comes is dropped (a newer one overtook it).
/// - A rate correction becomes ``Directive/setRate(_:)`` for a player with the `rate`
///   capability, undone (the timeline's rate again) at its `until_host_time_ns`, or earlier when
///   a newer command, correction or the end of group playback supersedes it. A seek correction
///   becomes a ``SeekCommand``.
/// - The position is reported every `reportIntervalNs` while the player follows a playing
///   timeline in group playback, with no suspension open, once the command's instant has passed
///   (not while paused: the agent corrects only playing players). One reading at a time: a
///   player that takes longer than the interval to say where it is (it was stopped, say) is
///   read again ``slowReadingRetryNs`` after it answers (it is busy catching up then), rather
///   than an interval after that reading began.
public struct CoordinatorPolicy: Sendable {
    /// What to do now.
    public enum Directive: Sendable, Equatable {
        /// Issue this command to the player (in turn; skip it if ``CoordinatorPolicy/isLatest(_:)``
        /// says a newer one came meanwhile).
        case issue(PlayerCommand, generation: UInt64)
        /// Set the player's rate (a drift correction, or its end).
        case setRate(Double)
        /// Read the player's position and report it to the agent.
        case reportPosition
    }

    public let capabilities: PlayerCapabilities
    public let reportIntervalNs: Int64
    /// After a reading that took longer than the interval, the next one this much later.
    public static let slowReadingRetryNs: Int64 = 10_000_000
    /// The last timed command (play, pause or buffer) given to the player.
    public private(set) var lastCommand: PlayerCommand?
    public private(set) var inGroupPlayback = false
    /// How many suspensions this player holds open.
    public private(set) var openSuspensions = 0
    /// The generation of the newest command.
    public private(set) var generation: UInt64 = 0
    /// A rate nudge in force: when to end it, and the rate to return to.
    public private(set) var nudge: (until: Int64, rate: Double)?
    /// No report before this instant: the player is not yet where it was told to be.
    private var reportsFrom: Int64 = .max
    private var lastReport: Int64?
    /// A reading for a report is under way (``onReported(now:)`` ends it).
    private var reading = false

    public init(capabilities: PlayerCapabilities, reportIntervalNs: Int64 = 100_000_000) {
        self.capabilities = capabilities
        self.reportIntervalNs = max(1_000_000, reportIntervalNs)
    }

    /// Whether a command of `generation` is still the newest (else it is history: drop it).
    public func isLatest(_ generation: UInt64) -> Bool { generation == self.generation }

    /// Event `timeline`.
    public mutating func onTimeline(_ e: TimelineEvent, now: Int64) -> [Directive] {
        let command: PlayerCommand
        if e.state == .playing {
            command = .play(PlayCommand(item: e.item, itemTimeNs: e.positionNs, hostTimeNs: e.hostTimeNs, rate: e.rate, originator: e.origin))
        } else {
            command = .pause(PauseCommand(item: e.item, itemTimeNs: e.positionNs, hostTimeNs: e.hostTimeNs, originator: e.origin, stopped: e.state == .stopped))
        }
        return timed(command, settlesAt: e.hostTimeNs)
    }

    /// Event `wait`: the group holds for someone.
    public mutating func onWait(_ e: WaitEvent, now: Int64) -> [Directive] {
        timed(.buffer(BufferingCommand(item: e.item, itemTimeNs: e.positionNs, hostTimeNs: e.hostTimeNs, originator: e.origin, waitingFor: e.waitingFor)), settlesAt: e.hostTimeNs)
    }

    /// Event `correction`: applied per the player's capabilities, only to a playing player.
    public mutating func onCorrection(_ e: CorrectionEvent, now: Int64) -> [Directive] {
        guard case .play(let play)? = lastCommand else { return [] }
        switch e.kind {
        case .rate:
            guard capabilities.rate, let rate = e.rate, let until = e.untilHostTimeNs, until > now else { return [] }
            // A newer nudge supersedes the one running: its end is the only one that counts.
            nudge = (until, play.rate)
            return [.setRate(rate)]
        case .seek:
            guard let position = e.positionNs, let host = e.hostTimeNs else { return [] }
            nudge = nil
            var origin = play.originator
            origin.reason = "correction"
            generation &+= 1
            reportsFrom = host
            let seek = SeekCommand(item: play.item, itemTimeNs: position, hostTimeNs: host, rate: play.rate, originator: origin, errorNs: e.errorNs)
            return [.issue(.seek(seek), generation: generation)]
        }
    }

    /// Event `group_playback`: leaving it ends a nudge at once (the group no longer steers).
    public mutating func onGroupPlayback(active: Bool, now: Int64) -> [Directive] {
        inGroupPlayback = active
        guard !active, let n = nudge else { return [] }
        nudge = nil
        return [.setRate(n.rate)]
    }

    /// The number of suspensions this player holds changed.
    public mutating func onSuspensions(open: Int) {
        openSuspensions = max(0, open)
    }

    /// The clock ticked (at ``nextWakeUp(now:)`` or later).
    public mutating func onTick(now: Int64) -> [Directive] {
        var out: [Directive] = []
        if let n = nudge, now >= n.until {
            nudge = nil
            out.append(.setRate(n.rate))
        }
        if shouldReport(now: now) {
            lastReport = now
            reading = true
            out.append(.reportPosition)
        }
        return out
    }

    /// The reading asked for by ``Directive/reportPosition`` came back (reported or not).
    public mutating func onReported(now: Int64) {
        reading = false
        if let last = lastReport, now &- last >= reportIntervalNs {
            lastReport = now &- reportIntervalNs &+ Self.slowReadingRetryNs
        }
    }

    /// When to tick next: the end of a nudge, or the next report while reports are on (while a
    /// reading is under way, every ``slowReadingRetryNs``, to see it end), no sooner than the
    /// command's instant. With no report to make (paused, suspended, out of group playback) and
    /// no nudge, `Int64.max`: a paused player's coordinator must not wake for nothing (a report
    /// due since before the pause would otherwise be due at once, for ever).
    public func nextWakeUp(now: Int64) -> Int64 {
        var next = Int64.max
        if reading {
            let retry = now.addingReportingOverflow(Self.slowReadingRetryNs)
            next = retry.overflow ? .max : retry.partialValue
        } else if reportsOn {
            let due = (lastReport ?? now).addingReportingOverflow(reportIntervalNs)
            next = due.overflow ? .max : max(due.partialValue, reportsFrom)
        }
        if let n = nudge { next = min(next, n.until) }
        return max(now, next)
    }

    /// The connection to the agent closed: nothing is in force until the agent says again.
    public mutating func onDisconnected() {
        inGroupPlayback = false
        nudge = nil
        reportsFrom = .max
    }

    private mutating func timed(_ command: PlayerCommand, settlesAt host: Int64) -> [Directive] {
        // A new timeline replaces the nudge's base: the command's own rate applies from now on.
        nudge = nil
        lastCommand = command
        generation &+= 1
        reportsFrom = host
        return [.issue(command, generation: generation)]
    }

    /// The player follows a playing timeline in group playback with no suspension open: reports
    /// go from the command's instant on.
    private var reportsOn: Bool {
        guard case .play? = lastCommand else { return false }
        return inGroupPlayback && openSuspensions == 0 && reportsFrom != .max
    }

    private func shouldReport(now: Int64) -> Bool {
        guard reportsOn, now >= reportsFrom, !reading else { return false }
        guard let last = lastReport else { return true }
        return now &- last >= reportIntervalNs
    }
}
