import LockstepCore

/// When the DNS-SD thread tries to reach avahi again while it cannot: soon after a loss or a
/// failed start, then less and less often, and at once when a daemon appears.
///
/// Why not a fixed interval: every attempt through avahi's compat library starts a thread, a
/// socket pair and a D-Bus connection. An agent on a host without avahi (peers given with
/// `--peer`) tried every 2 s, which cost it more CPU than all its other idle work (alone,
/// 10.2–10.5 ms in 30 s, against 3.7 ms with `--no-mdns`: docs/scale.md, thirtieth step). The loop looks every ``first`` at what is cheap to see (the
/// system bus's socket file, avahi's pid file) and attempts only when that changed or the wait
/// is over. A pid file is a hint only: avahi may run where its pid file is not visible (another
/// mount namespace sharing the bus), so attempts go on, less often, without one.
///
/// A value type; time (monotonic ns) and what the loop saw are arguments.
struct DNSSDRetry: Sendable, Equatable {
    /// The wait after a loss or the first failed attempt, and how often the loop looks (ns).
    let first: Int64
    /// The longest wait between attempts (ns).
    let longest: Int64
    /// Attempts that failed since the last connection.
    private var failures = 0
    /// Not before this does the next attempt go without a new daemon.
    private(set) var nextAttempt: Int64 = .min
    /// avahi's pid when the last attempt failed: a daemon with another pid is worth an attempt.
    private var daemonAtFailure: Int32?

    /// Waits start at `first`, double after each failed attempt, and stay at `longest`.
    init(first: Int64, longest: Int64) {
        precondition(first > 0 && longest >= first, "DNS-SD retry waits must be positive and ordered")
        self.first = first
        self.longest = longest
    }

    /// The wait after the `failures`-th failed attempt in a row: `first × 2^(failures − 1)`, at
    /// most `longest`.
    func wait(afterFailures failures: Int) -> Int64 {
        var wait = first
        for _ in 1..<max(1, failures) where wait < longest {
            wait = wait > longest / 2 ? longest : wait * 2
        }
        return min(wait, longest)
    }

    /// An attempt failed at `now`, while avahi's pid file named `daemon` (nil: none). Returns
    /// the wait until the next attempt that no new daemon brings forward.
    @discardableResult
    mutating func failed(at now: Int64, daemon: Int32?) -> Int64 {
        // A daemon not seen at the last failure may still be starting: the first wait, not a
        // long one. The same daemon failing again backs off as before.
        let newDaemon = daemon != nil && daemon != daemonAtFailure
        failures = newDaemon ? 1 : failures + 1
        let wait = wait(afterFailures: failures)
        nextAttempt = now.addingSaturating(wait)
        daemonAtFailure = daemon
        return wait
    }

    /// Connected: the next loss is retried after `first` again.
    mutating func connected() {
        failures = 0
        nextAttempt = .min
        daemonAtFailure = nil
    }

    /// Whether to attempt at `now`: never while the bus's socket file is missing (nothing could
    /// answer); at once for a daemon not seen at the last failure; otherwise once the wait is over.
    /// `daemon` (avahi's pid file, read from disk) is looked at only when the bus is there.
    func shouldAttempt(at now: Int64, busMissing: Bool, daemon: @autoclosure () -> Int32?) -> Bool {
        if busMissing { return false }
        if let daemon = daemon(), daemon != daemonAtFailure { return true }
        return now >= nextAttempt
    }

    /// When the loop should look again, after looking at `now` and not attempting: within
    /// `first`, and never at or before `now` (a wait over while the bus is missing must not spin).
    func nextLook(after now: Int64) -> Int64 {
        let look = now.addingSaturating(first)
        return nextAttempt > now ? min(nextAttempt, look) : look
    }
}
