import LockstepCore

/// How far ahead this mpv needs a start that seeks, learnt from its own exact seeks: the time from
/// the bridge's seek to mpv's `playback-restart` (such a start is a pause, an exact seek and an
/// unpause written at the anchor; the unpause itself moves the position within about a
/// millisecond). Declared until mpv follows a group timeline, whose plays and pauses are made in
/// place (``MPVBridgePolicy/Configuration/inPlaceLatencyNs``).
/// Pure: the shell says when a seek is issued and completes, with host times.
///
/// What an exact seek costs depends on the media and the machine (mpv 0.35.1, Debian 12,
/// `--vo=null --ao=null`, 30 random paused seeks): 320×180 H.264 with a keyframe every second,
/// p50 6.8 / p95 11.6 ms; the same with a keyframe every 10 s, p50 31 / p95 84 / max 109 ms
/// (decoding from the keyframe); an Opus tone, p50 3.4 / p95 20 ms. So it is measured per mpv
/// and per file rather than assumed.
///
/// The start latency is the 95th percentile of the recent seeks (nearest rank: with fewer than
/// 20 it is their maximum), times ``Configuration/factor``, plus ``Configuration/marginNs``,
/// kept within ``Configuration/floorNs`` … ``Configuration/ceilingNs``; before any seek,
/// ``Configuration/initialNs``.
public struct StartLatencyCalibration: Sendable, Equatable {
    public struct Configuration: Sendable, Equatable {
        /// Before the first measurement.
        public var initialNs: Int64 = 120 * Nanos.millisecond
        /// Never less. A command makes every agent, bridge and mpv of the group work at once for a
        /// few tens of milliseconds; an instant anchored within that burst is missed on a busy
        /// machine. In the 3-host lab on 2 cores, with a 30 ms floor (leads of ~50 ms) the
        /// bridge's timer woke up to 39 ms late at a group pause, pauses landed 15–35 ms apart
        /// and the mpv lab test failed 2 runs of 3; with 60 ms, 1 run of 6 (a paused spread of
        /// 40 ms) and the paused spread's p95 in `tools/bench mpv` rose from 2.8 to 4–5 ms. The
        /// probe before `hello` also sees a quiet mpv (its seeks took 3–4× longer at run time in
        /// `tools/bench mpv`).
        public var floorNs: Int64 = 80 * Nanos.millisecond
        /// Never more (the agent caps its lead at 2 s anyway).
        public var ceilingNs: Int64 = 2 * Nanos.second
        /// The percentile is multiplied by this…
        public var factor = 1.5
        /// …and this is added: a seek slower than any seen so far (a busier machine, a longer
        /// distance to the previous keyframe) still lands in time.
        public var marginNs: Int64 = 10 * Nanos.millisecond
        /// How many recent seeks count.
        public var window = 32
        /// A seek that took longer than this was mpv stopped or stalled (SIGSTOP, a network
        /// stream refilling its cache), not the cost of a seek: it is not counted.
        public var longestSampleNs: Int64 = Nanos.second
        /// A seek whose `playback-restart` has not come within this long is forgotten.
        public var pendingTimeoutNs: Int64 = 2 * Nanos.second

        public init() {}
    }

    public let configuration: Configuration
    /// Recent seek durations, oldest first.
    public private(set) var samples: [Int64] = []
    /// When the oldest seek not yet completed was issued (mpv may merge seeks issued together:
    /// the earliest is what the start waits for).
    private var pendingSince: Int64?

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    /// The bridge wrote an exact seek at `now`.
    public mutating func seekIssued(now: Int64) {
        if let since = pendingSince, now - since <= configuration.pendingTimeoutNs { return }
        pendingSince = now
    }

    /// mpv said `playback-restart` at `now`: the pending seek, if any, took until then.
    public mutating func seekCompleted(now: Int64) {
        guard let since = pendingSince else { return }
        pendingSince = nil
        guard now - since <= configuration.pendingTimeoutNs else { return }
        record(now - since)
    }

    /// A seek that took `durationNs` (measured by the caller, e.g. a probe before the session).
    public mutating func record(_ durationNs: Int64) {
        guard durationNs >= 0, durationNs <= configuration.longestSampleNs else { return }
        samples.append(durationNs)
        if samples.count > max(1, configuration.window) { samples.removeFirst(samples.count - max(1, configuration.window)) }
    }

    /// The 95th percentile of the recent seeks (nearest rank), if any.
    public var p95Ns: Int64? {
        guard !samples.isEmpty else { return nil }
        let sorted = samples.sorted()
        let rank = Int((0.95 * Double(sorted.count)).rounded(.up))
        return sorted[min(sorted.count, max(1, rank)) - 1]
    }

    /// How far ahead this mpv's starts must be anchored.
    public var startLatencyNs: Int64 {
        let c = configuration
        guard let p95 = p95Ns else { return min(max(c.initialNs, c.floorNs), c.ceilingNs) }
        let needed = Int64(saturating: (Double(p95) * c.factor).rounded(.up)).addingSaturating(c.marginNs)
        return min(max(needed, c.floorNs), c.ceilingNs)
    }
}
