/// What this node tells its peers of its intakes (the `intake` message), and when it tells
/// them again: how long operations other origins pushed lately took to reach it
/// (``AckDelays/worstIntake(now:)``), so that an origin that has not timed this node's
/// acknowledgements still anchors a command far enough ahead (``AckDelays/expected(for:now:)``).
///
/// Each publication goes to every reachable peer (63 datagrams at 64 devices), so it is rare by
/// design: the value carries a quarter of headroom (rounded up to a whole millisecond), it is
/// published again only when the longest intake exceeds it or falls below a quarter of it (or
/// there is none any more: zero withdraws it), or every ``refresh`` while it stands (receivers
/// keep it 10 minutes), and at most once a ``minInterval``; never again unchanged before that
/// (a sub-millisecond intake rounds to the 1 ms it was told as). A new
/// intake is looked at ``settle`` and this node's ``stagger`` after it arrived, not at once: the
/// burst that brought it is still reaching the others, and every device that saw it may publish,
/// so at once they would send n × (n − 1) datagrams together, in the way of the next command.
/// A peer becoming reachable is told the value at once (``published``).
public struct IntakePublication: Sendable, Equatable {
    /// The shortest time between two publications.
    public static let minInterval: TimeSpan = .seconds(1)
    /// A standing value is told again this long after it was last told: receivers keep it for
    /// ``AckDelays/Configuration/memory`` (10 minutes).
    public static let refresh: TimeSpan = .seconds(300)
    /// How long after an intake it is looked at, at least.
    public static let settle: TimeSpan = .milliseconds(500)
    /// The longest ``stagger``.
    public static let maxStagger: TimeSpan = .seconds(2)

    /// This node's wait after ``settle`` (below ``maxStagger``): its own, so that the devices
    /// that saw one operation do not publish together.
    public let stagger: TimeSpan

    /// What peers were last told (zero: nothing).
    public private(set) var published: TimeSpan = .zero
    /// When a new intake is to be looked at (nil: none waits).
    public private(set) var checkAt: LocalTime?
    private var lastAt: LocalTime?

    /// `stagger` is cut to below ``maxStagger``; see ``stagger(for:)``.
    public init(stagger: TimeSpan = .zero) {
        self.stagger = TimeSpan(ns: max(0, stagger.ns) % Self.maxStagger.ns)
    }

    /// A node's stagger, from its peer id (evenly spread, the same at every start).
    public static func stagger(for peer: PeerID) -> TimeSpan {
        TimeSpan(ns: Int64((peer.high ^ peer.low) % UInt64(maxStagger.ns / 1_000_000)) * 1_000_000)
    }

    /// An intake was recorded at `now`: look at it after ``settle`` and ``stagger`` (or the
    /// interval's end).
    public mutating func onIntake(now: LocalTime) {
        guard checkAt == nil else { return }
        var at = now + Self.settle + stagger
        if let lastAt { at = max(at, lastAt + Self.minInterval) }
        checkAt = at
    }

    /// What to publish at `now`, the longest intake being `worst` (nil: none lately); nil when
    /// peers need not hear again.
    public mutating func onCheck(worst: TimeSpan?, now: LocalTime) -> TimeSpan? {
        if let at = checkAt {
            guard now >= at else { return nil }
            checkAt = nil
        }
        let current = worst ?? .zero
        let value = current > .zero ? Self.withHeadroom(current) : .zero
        let rose = current > published
        // Below a quarter, but what it rounds to may be what peers were told: an intake under
        // 0.2 ms rounds to 1 ms, and was told again, unchanged, to every peer after every
        // command (docs/scale.md, twenty-fifth step).
        let fell = published > .zero && current * Int64(4) < published && value != published
        let stale = published > .zero && lastAt.map { now - $0 >= Self.refresh } ?? false
        guard rose || fell || stale else { return nil }
        if let lastAt, now - lastAt < Self.minInterval { return nil }
        published = value
        lastAt = now
        return published
    }

    /// `intake` and a quarter more, rounded up to a whole millisecond, within ``Limits/intakeNs``.
    static func withHeadroom(_ intake: TimeSpan) -> TimeSpan {
        let ms: Int64 = 1_000_000
        let padded = (intake + intake / 4).ns
        let rounded = padded.addingSaturating(ms - 1) / ms * ms
        return TimeSpan(ns: rounded).clamped(to: Limits.intakeNs)
    }
}
