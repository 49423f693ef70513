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
public struct AckDelays: Sendable, Equatable {
    public struct Configuration: Sendable, Equatable {
        /// Delays kept per peer (the latest).
        public var kept: Int = 8
        /// How long a delay counts.
        public var memory: TimeSpan = .seconds(600)

        public init() {}
    }

    struct Sample: Sendable, Equatable {
        var at: LocalTime
        var delay: TimeSpan
    }

    public let configuration: Configuration
    private var samples: [PeerID: [Sample]] = [:]

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    /// `peer` acknowledged, at `now`, an operation sent to it once `delay` earlier.
    public mutating func record(_ delay: TimeSpan, from peer: PeerID, at now: LocalTime) {
        var list = samples[peer] ?? []
        list.append(Sample(at: now, delay: max(delay, .zero)))
        if list.count > configuration.kept { list.removeFirst(list.count - configuration.kept) }
        samples[peer] = list
    }

    /// The longest of `peer`'s delays still counting at `now`; nil when none does.
    public func worst(of peer: PeerID, now: LocalTime) -> TimeSpan? {
        samples[peer]?.filter { now - $0.at <= configuration.memory }.map(\.delay).max()
    }

    /// `peer` left for good, or restarted: its delays were another life's.
    public mutating func forget(_ peer: PeerID) {
        samples[peer] = nil
    }
}
