/// Keeps one player on the group timeline from its position reports: small errors by a gentle
/// rate change for a while, large ones by an exact seek, with hysteresis so that it neither
/// chases noise nor oscillates. Players without rate control get seeks only.
///
/// Error = reported position − where the group timeline is (positive: the player is ahead).
///
///     |error| ≤ settle            in sync; no action (and a correction in progress ends)
///     |error| > start             (only from in-sync) needs a correction:
///        rate-capable, |error| ≤ seekAbove   → rate × (1 ∓ nudge) until the error is gone
///        otherwise                            → exact seek to where the timeline will be
///
/// `start` > `settle` is the hysteresis. A correction is not re-planned before it has had time
/// to work (`holdNs` after it began), and a seek is not repeated until the player reports again
/// from after it. After a ``reset()`` (the player was told a new timeline) the first error is
/// confirmed by the next report before anything is corrected: that report may describe the
/// player before it acted on the timeline (told it late, or slower to start than it said), and
/// a nudge for an error that is about to vanish would become one of its own.
public struct SyncPolicy: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// Below this the player is in sync. Players whose position reports are coarser declare a
        /// `sync_tolerance_ns` in their hello, which raises both thresholds.
        public var settle: TimeSpan = .microseconds(50)
        /// Above this an in-sync player needs a correction.
        public var start: TimeSpan = .microseconds(200)
        /// Rate-capable players: errors above this are fixed by seeking, below by rate.
        public var seekAbove: TimeSpan = .milliseconds(250)
        /// Players without rate control: errors above this are fixed by seeking.
        public var seekOnlyAbove: TimeSpan = .milliseconds(40)
        /// Largest relative rate change for a correction (0.02 = ±2%, inaudible with pitch correction).
        public var maxNudge: Double = 0.02
        /// Shortest rate correction (a smaller error gets a smaller nudge for this long).
        public var minNudgeDuration: TimeSpan = .milliseconds(500)
        /// After a correction starts, no new one is planned for this long (unless the error grows past seekAbove).
        public var hold: TimeSpan = .milliseconds(300)

        public init() {}
    }

    public enum Correction: Sendable, Equatable {
        /// Play at `rate` until `until`, then back at the timeline's rate.
        case rate(Double, until: LocalTime, error: TimeSpan)
        /// Be at `position` at `at` (exact seek).
        case seek(position: MediaPosition, at: LocalTime, error: TimeSpan)
    }

    enum Phase: Sendable, Equatable {
        case inSync
        case correcting(since: LocalTime, until: LocalTime)
        case seeking(since: LocalTime)
    }

    public let configuration: Configuration
    var phase: Phase = .inSync
    /// The last error seen, for status.
    public private(set) var lastError: TimeSpan?
    /// When ``lastError`` was measured.
    public private(set) var lastErrorAt: LocalTime?
    /// Set by ``reset()``: the next error waits for another report to confirm it.
    private var confirmNextError = false

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    /// Forget any correction in progress (the player was told a new timeline).
    public mutating func reset() {
        phase = .inSync
        confirmNextError = true
    }

    /// A report: at `reportedAt` the player was at `position`. Returns a correction when one is needed.
    ///
    /// - Parameters:
    ///   - timeline: the group timeline on the local clock (playing).
    ///   - outputLatency: the player's output latency (it must be ahead by this much).
    ///   - lead: how far ahead a seek must be anchored for the player to make it.
    public mutating func onReport(
        position: MediaPosition, reportedAt: LocalTime, timeline: Timeline<LocalTime>, outputLatency: TimeSpan, canChangeRate: Bool,
        lead: TimeSpan, now: LocalTime
    ) -> Correction? {
        guard timeline.phase == .playing, timeline.rate > 0 else {
            phase = .inSync
            return nil
        }
        let target = timeline.position(at: reportedAt + outputLatency)
        let error = position - target
        lastError = error
        lastErrorAt = now
        let magnitude = error.magnitude
        let c = configuration

        switch phase {
        case .seeking(let since):
            // Reports from before the seek landed say nothing about it.
            if reportedAt <= since { return nil }
            phase = .inSync
        case .correcting(let since, let until):
            if magnitude <= c.settle || now >= until {
                phase = .inSync
                if magnitude <= c.settle { return .rate(timeline.rate, until: now, error: error) }
            } else if now - since < c.hold && magnitude <= c.seekAbove {
                return nil
            } else {
                phase = .inSync
            }
        case .inSync:
            break
        }

        let confirming = confirmNextError
        confirmNextError = false
        guard magnitude > c.start, !confirming else { return nil }
        if canChangeRate && magnitude <= c.seekAbove {
            // Close the gap at up to maxNudge: ahead → slower, behind → faster.
            let duration = max(c.minNudgeDuration, TimeSpan(nanoseconds: Double(magnitude.ns) / (c.maxNudge * timeline.rate)))
            let nudge = Double(error.ns) / Double(duration.ns) / timeline.rate
            let rate = timeline.rate * (1 - nudge)
            phase = .correcting(since: now, until: now + duration)
            return .rate(rate, until: now + duration, error: error)
        }
        if !canChangeRate && magnitude <= c.seekOnlyAbove { return nil }
        let at = now + lead
        phase = .seeking(since: at)
        return .seek(position: timeline.position(at: at + outputLatency), at: at, error: error)
    }
}
