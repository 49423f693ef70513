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
/// from after it.
public struct SyncPolicy: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// Below this the player is in sync (ns). Players whose position reports are coarser
        /// declare a `sync_tolerance_ns` in their hello, which raises both thresholds.
        public var settleNs: Int64 = 50 * Nanos.microsecond
        /// Above this an in-sync player needs a correction (ns).
        public var startNs: Int64 = 200 * Nanos.microsecond
        /// Rate-capable players: errors above this are fixed by seeking, below by rate (ns).
        public var seekAboveNs: Int64 = 250 * Nanos.millisecond
        /// Players without rate control: errors above this are fixed by seeking (ns).
        public var seekOnlyAboveNs: Int64 = 40 * Nanos.millisecond
        /// Largest relative rate change for a correction (0.02 = ±2%, inaudible with pitch correction).
        public var maxNudge: Double = 0.02
        /// Shortest rate correction (a smaller error gets a smaller nudge for this long).
        public var minNudgeDurationNs: Int64 = 500 * Nanos.millisecond
        /// After a correction starts, no new one is planned for this long (unless the error grows past seekAbove).
        public var holdNs: Int64 = 300 * Nanos.millisecond

        public init() {}
    }

    public enum Correction: Sendable, Equatable {
        /// Play at `rate` until local time `until`, then back at the timeline's rate.
        case rate(Double, until: Int64, errorNs: Int64)
        /// Be at `position` at local time `at` (exact seek).
        case seek(position: Int64, at: Int64, errorNs: Int64)
    }

    enum Phase: Sendable, Equatable {
        case inSync
        case correcting(since: Int64, until: Int64)
        case seeking(since: Int64)
    }

    public let configuration: Configuration
    var phase: Phase = .inSync
    /// The last error seen, for status.
    public private(set) var lastErrorNs: Int64?

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    /// Forget any correction in progress (the player was told a new timeline).
    public mutating func reset() {
        phase = .inSync
    }

    /// A report: at local time `reportedAt` the player was at `position`. `target` is where the
    /// group timeline says it should have been. Returns a correction when one is needed.
    ///
    /// - Parameters:
    ///   - timeline: the group timeline on the local clock (playing).
    ///   - outputLatencyNs: the player's output latency (it must be ahead by this much).
    ///   - leadNs: how far ahead a seek must be anchored for the player to make it.
    public mutating func onReport(position: Int64, reportedAt: Int64, timeline: Timeline, outputLatencyNs: Int64, canChangeRate: Bool, leadNs: Int64, now: Int64) -> Correction? {
        guard timeline.phase == .playing, timeline.rate > 0 else {
            phase = .inSync
            return nil
        }
        let target = timeline.position(at: reportedAt + outputLatencyNs)
        let error = position - target
        lastErrorNs = error
        let magnitude = abs(error)
        let c = configuration

        switch phase {
        case .seeking(let since):
            // Reports from before the seek landed say nothing about it.
            if reportedAt <= since { return nil }
            phase = .inSync
        case .correcting(let since, let until):
            if magnitude <= c.settleNs || now >= until {
                phase = .inSync
                if magnitude <= c.settleNs { return .rate(timeline.rate, until: now, errorNs: error) }
            } else if now - since < c.holdNs && magnitude <= c.seekAboveNs {
                return nil
            } else {
                phase = .inSync
            }
        case .inSync:
            break
        }

        guard magnitude > c.startNs else { return nil }
        if canChangeRate && magnitude <= c.seekAboveNs {
            // Close the gap at up to maxNudge: ahead → slower, behind → faster.
            let duration = max(c.minNudgeDurationNs, Int64(Double(magnitude) / (c.maxNudge * timeline.rate)))
            let nudge = Double(error) / Double(duration) / timeline.rate
            let rate = timeline.rate * (1 - nudge)
            phase = .correcting(since: now, until: now + duration)
            return .rate(rate, until: now + duration, errorNs: error)
        }
        if !canChangeRate && magnitude <= c.seekOnlyAboveNs { return nil }
        let at = now + leadNs
        phase = .seeking(since: at)
        return .seek(position: timeline.position(at: at + outputLatencyNs), at: at, errorNs: error)
    }
}
