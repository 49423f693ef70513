/// This peer's copy of the group state, and the bookkeeping that spreads it: a Lamport clock for
/// new commands, acknowledgements and retransmissions for the commands this peer sends, and the
/// anti-entropy schedule.
///
/// Dissemination, in three layers (each enough on its own for convergence, the first two for speed):
/// 1. A new record is sent at once to every reachable peer, asking for an acknowledgement.
/// 2. Unacknowledged records are sent again, each peer on its own backoff (from twice its round
///    trip, doubling), until acknowledged, superseded by a later record, or the peer is lost.
/// 3. Every `antiEntropyInterval`, and whenever a peer becomes reachable, each peer sends its
///    digest (the stamps it holds); a peer that holds newer records pushes them, and one that
///    lacks some answers with its own digest. Partitions that heal, restarted peers and late
///    joiners converge in one round.
public struct Replica: Sendable {
    public struct Configuration: Sendable, Equatable {
        public var antiEntropyInterval: TimeSpan = .seconds(1)
        /// The first retransmission waits max(this, 2 × round trip); each next one twice as long.
        public var minRetransmit: TimeSpan = .milliseconds(10)
        public var maxRetransmit: TimeSpan = .milliseconds(500)
        /// After this many attempts a record is left to anti-entropy.
        public var maxAttempts: Int = 8

        public init() {}
    }

    /// A record on its way to peers.
    public enum Outgoing: Sendable, Equatable {
        case item(ItemRecord)
        case current(CurrentRecord)

        public var stamp: Stamp {
            switch self {
            case .item(let r): r.stamp
            case .current(let r): r.stamp
            }
        }
    }

    struct Pending: Sendable {
        var record: Outgoing
        /// Per peer: when to send next, and how many times it was sent.
        var awaiting: [PeerID: (next: LocalTime, attempts: Int)]
    }

    /// What happened to a record from a peer.
    public enum ApplyOutcome: Equatable, Sendable {
        /// The record is new and now part of the state.
        case applied
        /// The state already holds this exact record.
        case duplicate
        /// The state holds a later record for the same register (or the record is too old to keep).
        case superseded
        /// Its Lamport counter is more than ``Limits/lamportJump`` ahead of everything seen: a
        /// poisoned record (it would pin the state for good), refused and counted.
        case lamportTooFarAhead
    }

    public let me: PeerID
    public let incarnation: UInt64
    public let configuration: Configuration
    public private(set) var state = GroupState()
    /// Larger than every stamp seen: the counter of the next command.
    public private(set) var lamport: UInt64 = 0
    var pending: [Stamp: Pending] = [:]
    var nextAntiEntropy: LocalTime?

    public init(me: PeerID, incarnation: UInt64, configuration: Configuration = .init()) {
        self.me = me
        self.incarnation = incarnation
        self.configuration = configuration
    }

    // MARK: - Issuing

    /// The stamp and version vector for a new command, raising the Lamport clock (it saturates at
    /// ``Limits/counter``'s end, which records from peers cannot come near: see ``apply(_:)``).
    public mutating func nextStamp() -> (Stamp, VersionVector) {
        lamport = min(lamport.addingSaturating(1), Limits.counter.upperBound)
        let stamp = Stamp(lamport: lamport, origin: me, incarnation: incarnation)
        let version = state.version.merged(with: VersionVector([.init(peer: me, counter: lamport)]))
        return (stamp, version)
    }

    /// Applies a record this peer issued and queues it for every peer in `to`.
    public mutating func issue(_ record: Outgoing, to peers: [PeerID], rtt: (PeerID) -> TimeSpan?, now: LocalTime) {
        _ = apply(record)
        var awaiting: [PeerID: (next: LocalTime, attempts: Int)] = [:]
        for p in peers { awaiting[p] = (now + retransmitDelay(rtt(p), attempts: 0), 1) }
        if !awaiting.isEmpty { pending[record.stamp] = Pending(record: record, awaiting: awaiting) }
    }

    // MARK: - Receiving

    /// Merges a record from a peer; raises the Lamport clock past it. A record whose counter is far
    /// ahead of everything seen is refused (review finding H2: one such record would make every
    /// later command lose the merge).
    @discardableResult
    public mutating func apply(_ record: Outgoing) -> ApplyOutcome {
        guard record.stamp.lamport <= lamport.addingSaturating(Limits.lamportJump) else { return .lamportTooFarAhead }
        lamport = max(lamport, record.stamp.lamport)
        let outcome: GroupState.MergeOutcome
        switch record {
        case .item(let r): outcome = state.merge(r)
        case .current(let r): outcome = state.merge(r)
        }
        switch outcome {
        case .applied: return .applied
        case .duplicate: return .duplicate
        case .superseded: return .superseded
        }
    }

    /// `peer` has the record stamped `stamp`.
    public mutating func acknowledged(_ stamp: Stamp, by peer: PeerID) {
        guard var p = pending[stamp] else { return }
        p.awaiting[peer] = nil
        pending[stamp] = p.awaiting.isEmpty ? nil : p
    }

    /// `peer` is gone: stop retransmitting to it (anti-entropy catches it up when it is back).
    public mutating func forget(_ peer: PeerID) {
        for stamp in Array(pending.keys) {
            pending[stamp]?.awaiting[peer] = nil
            if pending[stamp]?.awaiting.isEmpty == true { pending[stamp] = nil }
        }
    }

    // MARK: - Time

    /// Records due for retransmission now, to whom; superseded records are dropped.
    public mutating func retransmissions(now: LocalTime, rtt: (PeerID) -> TimeSpan?) -> [(Outgoing, PeerID)] {
        var out: [(Outgoing, PeerID)] = []
        for stamp in Array(pending.keys) {
            guard var p = pending[stamp] else { continue }
            if isSuperseded(p.record) {
                pending[stamp] = nil
                continue
            }
            for (peer, entry) in p.awaiting where entry.next <= now {
                if entry.attempts >= configuration.maxAttempts {
                    p.awaiting[peer] = nil
                    continue
                }
                out.append((p.record, peer))
                p.awaiting[peer] = (now + retransmitDelay(rtt(peer), attempts: entry.attempts), entry.attempts + 1)
            }
            pending[stamp] = p.awaiting.isEmpty ? nil : p
        }
        return out
    }

    /// True when an anti-entropy round is due (and schedules the next one).
    public mutating func antiEntropyDue(now: LocalTime) -> Bool {
        if let next = nextAntiEntropy, now < next { return false }
        nextAntiEntropy = now + configuration.antiEntropyInterval
        return true
    }

    /// When ``retransmissions(now:rtt:)`` or ``antiEntropyDue(now:)`` next has work.
    public func nextDeadline(now: LocalTime) -> LocalTime {
        var next = nextAntiEntropy ?? now
        for p in pending.values {
            for entry in p.awaiting.values { next = min(next, entry.next) }
        }
        return max(next, now)
    }

    /// The local clock stepped: every retransmission and the anti-entropy round are due now.
    public mutating func rebase(now: LocalTime) {
        for (stamp, p) in pending {
            var p = p
            for (peer, entry) in p.awaiting { p.awaiting[peer] = (now, entry.attempts) }
            pending[stamp] = p
        }
        nextAntiEntropy = now
    }

    /// Records awaiting acknowledgement (for status).
    public var pendingCount: Int { pending.count }

    private func isSuperseded(_ record: Outgoing) -> Bool {
        switch record {
        case .item(let r): return state.items[r.item].map { $0.stamp > r.stamp } ?? true
        case .current(let r): return state.current.map { $0.stamp > r.stamp } ?? false
        }
    }

    private func retransmitDelay(_ rtt: TimeSpan?, attempts: Int) -> TimeSpan {
        let base = max(configuration.minRetransmit, 2 * (rtt ?? configuration.minRetransmit))
        return min(base.doubled(min(attempts, 10)), configuration.maxRetransmit)
    }
}
