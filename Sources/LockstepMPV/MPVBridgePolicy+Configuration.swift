import LockstepCore

extension MPVBridgePolicy {
    public struct Configuration: Sendable, Equatable {
        /// How long mpv needs to pause and seek exactly before it can resume on time, if fixed
        /// (`--start-latency-ms`); nil: calibrated from this mpv's own seeks (``calibration``).
        /// Declared to the agent as the player's start latency, so group anchors leave it this
        /// much room.
        public var startLatencyNs: Int64?
        /// A playing instruction due sooner than this is moved this far later, to the matching
        /// position. Only then: every mpv seeks to the same position for a start, and an exact
        /// seek of a video lands up to ±20 ms off its target depending on the target (common to
        /// all when the target is; measured with mpv 0.35.1, the bench's 25 fps video), while an
        /// unpause written before the seek completes starts at most ~7 ms behind (corrected by
        /// the agent's rate nudges). So a start is moved only when the bridge could not even
        /// write the seek and see its deadline in time.
        public var minimumLeadNs: Int64 = 10 * Nanos.millisecond
        /// The start latency declared while mpv follows a group timeline (unless fixed): its plays
        /// from where it stands paused and its pauses need no seek, only an unpause or a pause at
        /// the instant (mpv moves within 1.7 ms p95 of an unpause). What it covers is the
        /// burst of work a command causes on every agent, bridge and mpv at once (the command's
        /// delivery, the bridge's timer waking late on a busy machine: up to 39 ms seen in the
        /// 3-host lab on 2 cores).
        public var inPlaceLatencyNs: Int64 = 60 * Nanos.millisecond
        /// A start is made in place when mpv stands within this of the start's position (it
        /// paused a little off the group's position, or played a moment when its user pressed
        /// play): it unpauses that much earlier or later instead.
        public var inPlaceWithinNs: Int64 = 100 * Nanos.millisecond
        /// A start in place due sooner than ``minimumLeadNs`` is made that late, behind the group
        /// by at most this (the agent's rate corrections close it); later than that, with a seek
        /// to where the group is then.
        public var inPlaceLateByAtMostNs: Int64 = 10 * Nanos.millisecond
        /// A reading of a paused mpv taken at least this long after it paused says where it
        /// stands (and will resume).
        public var standingSettleNs: Int64 = 20 * Nanos.millisecond
        /// How the start latency is learnt when it is not fixed.
        public var calibration = StartLatencyCalibration.Configuration()
        /// A playing mpv that would be within this of a new playing timeline keeps playing.
        public var keepPlayingWithinNs: Int64 = 15 * Nanos.millisecond
        /// A playing mpv paused at the group's pause instant is not sought if it was on the
        /// timeline to within this: a seek makes a paused mpv misreport its position (and show a
        /// wrong time) for a while, the next start seeks exactly anyway, and a reading taken
        /// during a rate correction is off by a few ms (mpv's audio buffer times the change).
        public var pauseWithoutSeekWithinNs: Int64 = 10 * Nanos.millisecond
        /// A playing mpv behind the group's pause position by up to this long is paused when it
        /// gets there rather than at the group's instant, and needs no seek.
        public var pauseLateByAtMostNs: Int64 = 100 * Nanos.millisecond
        /// How long after a speed change `audio-pts` is unreliable (mpv's audio buffer, 0.2 s).
        public var speedSettleNs: Int64 = 300 * Nanos.millisecond
        /// How long after mpv resumes at an anchor its readings are not reported, while its
        /// audio output starts again.
        public var resumeSettleNs: Int64 = 100 * Nanos.millisecond
        /// A position reading older than this no longer says where mpv is (readings come ten
        /// times a second: several have been missed).
        public var readingMaxAgeNs: Int64 = 500 * Nanos.millisecond
        /// A seek event within this long of the bridge's own seek is the bridge's.
        public var ownSeekWindowNs: Int64 = 2 * Nanos.second
        /// Custom item identifiers by file (mpv's `path` as loaded, absolute).
        public var itemIDs: [String: String] = [:]
        /// Show who changed what on mpv's OSD.
        public var osd = true
        /// How long an OSD message stays, ms.
        public var osdDurationMs = 2000

        public init() {}
    }
}
