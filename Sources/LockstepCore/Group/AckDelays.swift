/// How long each peer took to acknowledge this node's operations: from the operation's first
/// send to its `ack`, which spans the way there and back *and* the peer's agent taking the
/// datagram in (its scheduling, on a loaded or slow device). The clock exchanges' round trip
/// does not show that last part: their timestamps are the kernel's. The lead of a command
/// (``LeadTime``) takes the worst recent delay of each peer, so that a peer whose agent answers
/// late still learns of a play before its instant.
///
/// Only acknowledgements of a first send count (Karn's rule: after a retransmission, which send
/// an `ack` answers is unknown). A peer keeps its ``Configuration/kept`` latest delays, each for
/// ``Configuration/memory``, so a burst of load long ago stops lengthening commands. Delays are
/// measured on this node's clock; a member can only make them longer, and the lead's cap bounds
/// that.
///
/// A node that has not issued an operation lately has timed nobody. For a peer it has not timed
/// it takes the longest *intake* instead: how long the operations other origins pushed took to
/// reach this node (``recordIntake(_:at:)``): from their stamp to their arrival, both on the
/// group's time scale (the most advanced clock, as the origin and this node read it: within
/// their clocks' error). In a group where a command reaches the last peer 50 ms after its issue
/// (64 agents sharing two cores), the first command of a node that never issued one was
/// anchored 35 ms ahead and nearly every player started late.
///
/// An intake is one place in another origin's burst, and a node that has seen few operations
/// may have seen only early places. So each peer also publishes its own longest intake
/// (``IntakePublication``, the `intake` message), and for a peer not timed the lead takes the longer
/// of that and this node's own: the peer's record of how long operations take to reach it.
public struct AckDelays: Sendable, Equatable {
    public struct Configuration: Sendable, Equatable {
        /// Delays kept per peer (the latest).
        public var kept: Int = 8
        /// How long a delay counts.
        public var memory: TimeSpan = .seconds(600)
        /// The longest intake kept. An operation that took longer was late for any lead (its
        /// cap is 2 s), or its origin read the group's most advanced clock differently (a peer
        /// one of them does not know yet): not a delay to plan for.
        public var maxIntake: TimeSpan = .seconds(1)

        public init() {}
    }

    struct Sample: Sendable, Equatable {
        var at: LocalTime
        var delay: TimeSpan
    }

    public let configuration: Configuration
    private var samples: [PeerID: [Sample]] = [:]
    private var intakes: [Sample] = []
    /// What each peer published of its intakes, and when it arrived.
    private var published: [PeerID: Sample] = [:]

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    /// `peer` acknowledged, at `now`, an operation sent to it once `delay` earlier.
    public mutating func record(_ delay: TimeSpan, from peer: PeerID, at now: LocalTime) {
        samples[peer] = latest(samples[peer] ?? [], adding: Sample(at: now, delay: max(delay, .zero)))
    }

    /// The longest of `peer`'s delays still counting at `now`; nil when none does.
    public func worst(of peer: PeerID, now: LocalTime) -> TimeSpan? {
        samples[peer].flatMap { longest(in: $0, now: now) }
    }

    /// An operation another origin pushed arrived, at `now`, `delay` after it was stamped.
    /// Negative delays (the origin's reading of the group's clock ahead of this node's) and
    /// delays over ``Configuration/maxIntake`` are not kept.
    public mutating func recordIntake(_ delay: TimeSpan, at now: LocalTime) {
        guard delay >= .zero, delay <= configuration.maxIntake else { return }
        intakes = latest(intakes, adding: Sample(at: now, delay: delay))
    }

    /// The longest of the latest intakes still counting at `now`; nil when none does.
    public func worstIntake(now: LocalTime) -> TimeSpan? {
        longest(in: intakes, now: now)
    }

    /// This node's clock stepped: intakes read across the step are no delays.
    public mutating func forgetIntakes() {
        intakes.removeAll()
    }

    /// `peer` published, at `now`, how long operations lately took to reach it (zero: none
    /// lately, which withdraws what it published before). Counts for ``Configuration/memory``.
    public mutating func recordPublished(_ intake: TimeSpan, from peer: PeerID, at now: LocalTime) {
        published[peer] = intake > .zero ? Sample(at: now, delay: intake) : nil
    }

    /// What `peer` published of its intakes, while it counts at `now`.
    public func publishedIntake(of peer: PeerID, now: LocalTime) -> TimeSpan? {
        published[peer].flatMap { counts($0, at: now) ? $0.delay : nil }
    }

    /// How long an operation of this node is expected to take to reach `peer`: the longest of
    /// its timed acknowledgements, or, when it has none, the longer of the peer's published
    /// intake and this node's own longest; nil when nothing is known.
    public func expected(for peer: PeerID, now: LocalTime) -> TimeSpan? {
        if let acked = worst(of: peer, now: now) { return acked }
        let own = worstIntake(now: now), theirs = publishedIntake(of: peer, now: now)
        guard let own else { return theirs }
        return theirs.map { max($0, own) } ?? own
    }

    /// `peer` left for good, or restarted: its delays were another life's.
    public mutating func forget(_ peer: PeerID) {
        samples[peer] = nil
        published[peer] = nil
    }

    /// `list` with `sample` added, the ``Configuration/kept`` latest.
    private func latest(_ list: [Sample], adding sample: Sample) -> [Sample] {
        Array((list + [sample]).suffix(configuration.kept))
    }

    /// The longest delay of `list` still counting at `now`.
    private func longest(in list: [Sample], now: LocalTime) -> TimeSpan? {
        list.filter { counts($0, at: now) }.map(\.delay).max()
    }

    /// Whether `sample` still counts at `now` (taken within ``Configuration/memory``).
    private func counts(_ sample: Sample, at now: LocalTime) -> Bool {
        now - sample.at <= configuration.memory
    }
}
