extension MPVBridgePolicy {
    /// What the group wants of this mpv, and what the bridge is doing about it. Each case holds
    /// only what it needs: a start pending during a group pause, or a rate correction while the
    /// group is paused, cannot be written down.
    ///
    /// A play command (or a seek correction) leads to `starting`, or straight to `following`
    /// when mpv is on it already; the start's instant to `following` (a rate correction and its
    /// end only change mpv's speed); a pause or buffer command to `holding`, and the hold carried
    /// out to `held`; a new file, or none, to `free`.
    enum Phase: Equatable {
        /// No group timeline for this file yet (or a solo file, or no file): every change is the
        /// user's own.
        case free
        /// The group plays: mpv, paused and sought, unpauses at the start's instant.
        case starting(Start)
        /// The group plays at `rate`, and mpv with it (at a drift correction's speed meanwhile).
        case following(rate: Double)
        /// The group pauses: mpv plays on until the hold is due, then pauses there.
        case holding(Hold)
        /// The group is paused, and so is mpv.
        case held

        /// A start at an anchor.
        struct Start: Equatable {
            /// Unpause at this host time.
            var at: Int64
            /// The group's rate.
            var rate: Double
        }

        /// The group's pause: its instant `at` and `position`. mpv pauses at `due` (and is sought
        /// exactly there unless it is there already): the group's instant, or, `refined`, when
        /// mpv's position reaches the group's; until then `due` is also when to look again.
        struct Hold: Equatable {
            var at: Int64
            var position: Int64
            var refined = false
            var due: Int64
        }

        /// What mpv's `pause` should be: paused once the group's pause is carried out and while a
        /// start waits for its instant; nil where the group has no say.
        var wantsPaused: Bool? {
            switch self {
            case .free: nil
            case .starting, .held: true
            case .following, .holding: false
            }
        }

        /// When something is next due (a host time), if ever.
        var deadline: Int64? {
            switch self {
            case .starting(let s): s.at
            case .holding(let h): h.due
            case .free, .following, .held: nil
            }
        }
    }
}
