import LockstepClient
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
        /// The coordinator's commands (``PlayerDelegate``): play, pause (or stop), buffer, or a
        /// seek correction.
        case command(PlayerCommand)
        /// The coordinator's `setRate`: a rate correction, or its end (the group's rate again).
        case rate(Double)
        /// The group's item changed (for the OSD).
        case itemProposed(GroupItem)
        /// The coordinator (re)connected to the agent, with this item loaded.
        case agentConnected(currentItem: String?)
        /// Time passed (the shell calls this at ``nextDeadline`` and now and then).
        case tick
    }
}
