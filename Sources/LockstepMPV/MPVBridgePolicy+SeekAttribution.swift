extension MPVBridgePolicy {
    /// Whose seek mpv is carrying out. mpv reports every seek (`seek`, then `playback-restart`)
    /// and not who asked for it: the bridge counts its own until mpv reports them, and any other
    /// is the user's. mpv may merge seeks issued together into one, so the count lapses a while
    /// after the bridge's last seek.
    struct SeekAttribution: Equatable {
        /// The bridge's own seeks whose `seek` event has not come yet, and until when one may
        /// still come.
        private var unstarted = 0
        private var until: Int64 = .min
        /// An own seek is under way: positions read now say nothing (until `playback-restart`).
        private(set) var ownRunning = false
        /// The user's seek is under way: where it lands goes to the group.
        private var userRunning = false

        /// The bridge seeks at `now`; its `seek` event may come until `window` later.
        mutating func issued(now: Int64, window: Int64) {
            unstarted += 1
            ownRunning = true
            until = now + window
            userRunning = false
        }

        /// mpv began a seek: the bridge's own if one is expected, else the user's (with a file
        /// loaded).
        mutating func started(now: Int64, loaded: Bool) {
            if now > until { unstarted = 0 }
            if unstarted > 0 {
                unstarted -= 1
            } else if loaded {
                userRunning = true
            }
        }

        /// mpv resumed after a seek; true if that seek was the user's.
        mutating func restarted() -> Bool {
            ownRunning = false
            defer { userRunning = false }
            return userRunning
        }

        /// An own seek is under way and recent: positions read now are not reported.
        func ownUnderWay(now: Int64) -> Bool {
            ownRunning && now <= until
        }

        /// A new timeline: a user's seek under way is no longer the group's business.
        mutating func forgetUser() {
            userRunning = false
        }
    }
}
