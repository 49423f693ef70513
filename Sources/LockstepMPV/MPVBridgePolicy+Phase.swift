extension MPVBridgePolicy {
    /// What the group wants of this mpv, and what the bridge is doing about it. Each case holds
    /// only what it needs: a start pending during a group pause, or a rate correction while the
    /// group is paused, cannot be written down.
    ///
    /// A playing timeline (or a seek correction) leads to `starting`, or straight to `following`
    /// when mpv is on it already; the start's instant to `following` (or to `correcting`: see
    /// ``Start/correctionUntil``); a rate correction to `correcting` and its end back to
    /// `following`; a paused timeline or a wait to `holding`, and the hold carried out to `held`;
    /// a new file, or none, to `free`.
    enum Phase: Equatable {
        /// No group timeline for this file yet (or a solo file, or no file): every change is the
        /// user's own.
        case free
        /// The group plays: mpv, paused and sought, unpauses at the start's instant.
        case starting(Start)
        /// The group plays at `rate`, and mpv with it.
        case following(rate: Double)
        /// The group plays at `rate`; mpv runs at a correction's speed until `until`, then at
        /// `rate` again.
        case correcting(rate: Double, until: Int64)
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
            /// A seek correction that comes during a rate correction keeps that correction's end:
            /// the group's rate is set again then (and reports wait for it).
            var correctionUntil: Int64?
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
            case .following, .correcting, .holding: false
            }
        }

        /// When something is next due (a host time), if ever.
        var deadline: Int64? {
            switch self {
            case .starting(let s): min(s.at, s.correctionUntil ?? .max)
            case .holding(let h): h.due
            case .correcting(_, let until): until
            case .free, .following, .held: nil
            }
        }
    }
}
