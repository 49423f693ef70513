import LockstepPlayerProtocol

extension MPVBridgePolicy {
    /// What mpv or the agent said.
    public enum Input: Sendable, Equatable {
        /// mpv's `pause` property (observed: first its value, then every change).
        case pause(Bool)
        /// mpv's `speed` property.
        case speed(Double)
        /// mpv's `paused-for-cache` property.
        case pausedForCache(Bool)
        /// A file is loaded (`file-loaded`): its absolute path or URL, its duration if known.
        case fileLoaded(path: String, durationNs: Int64?, title: String?)
        /// mpv closed the file (`end-file`).
        case fileEnded
        /// mpv began a seek (`seek` event).
        case seekStarted
        /// Playback resumed after a seek (`playback-restart`), and where, if it could be read.
        case playbackRestarted(positionNs: Int64?)
        /// A position reading: at host time `at` mpv presented `positionNs` (`audio-pts`).
        case position(Int64, at: Int64)
        /// Agent events.
        case timeline(TimelineEvent)
        case wait(WaitEvent)
        case correction(CorrectionEvent)
        case itemProposed(ItemProposedEvent)
        /// Time passed (the shell calls this at ``nextDeadline`` and now and then).
        case tick
    }
}
