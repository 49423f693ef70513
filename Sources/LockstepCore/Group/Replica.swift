/// This peer's copy of the group's history (``OperationLog``), and the bookkeeping that spreads
/// it: acknowledgements and retransmissions for the operations this peer sends, and the
/// anti-entropy schedule.
///
/// Dissemination, in three layers (each enough on its own for convergence, the first two for speed):
/// 1. A new operation is sent at once to every reachable peer, asking for an acknowledgement.
/// 2. Unacknowledged operations are sent again, each peer on its own backoff (from twice its
///    round trip, doubling), until acknowledged or the peer is lost.
/// 3. Every `antiEntropyInterval` each peer sends its digest (its version vector and state
///    fingerprint) to a few peers in turn (``Configuration/antiEntropyFanout(peers:)``: all of a
///    small group, about log₂ n of a large one, so that idle traffic grows as n log n rather than
///    n²), and to a peer as soon as it becomes reachable; a peer that holds operations the other
///    lacks sends them, and one that lacks some answers with its own digest. Partitions that
///    heal, restarted peers and late joiners converge in one round. While nothing happens the
///    rounds space out, doubling up to `maxAntiEntropyInterval`; anything new (see
///    ``noteActivity()``) brings the next round within `antiEntropyInterval` of the last again.
public struct Replica: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// Between rounds while anything is happening.
        public var antiEntropyInterval: TimeSpan = .seconds(1)
        /// Between rounds of an idle group: each round that found nothing new doubles the
        /// interval up to this. Rounds are a repair path (operations are pushed and retransmitted
        /// first), so an idle group's digests need not go every second.
        public var maxAntiEntropyInterval: TimeSpan = .seconds(4)
        /// Peers a round's digest goes to, at least (all of them in a group this small).
        public var minAntiEntropyFanout: Int = 3
        /// The first retransmission waits max(this, 2 × round trip); each next one twice as long.
        public var minRetransmit: TimeSpan = .milliseconds(10)
        public var maxRetransmit: TimeSpan = .milliseconds(500)
        /// After this many attempts an operation is left to anti-entropy.
        public var maxAttempts: Int = 8
        public var log = OperationLog.Configuration()

        public init() {}

        /// How many of `peers` reachable peers one anti-entropy round reaches: all of them up to
        /// ``minAntiEntropyFanout``, else `max(minAntiEntropyFanout, ⌈log₂ peers⌉ + 1)`. Every
        /// peer then hears a digest from about as many others each round (and from each one at
        /// least every `peers / fanout` rounds), which is what an epidemic needs to spread a
        /// missing operation to all in O(log n) rounds.
        public func antiEntropyFanout(peers: Int) -> Int {
            guard peers > minAntiEntropyFanout else { return max(peers, 0) }
            var log2 = 0
            while (1 << log2) < peers { log2 += 1 }
            return min(peers, max(minAntiEntropyFanout, log2 + 1))
        }
    }

    struct Pending: Sendable {
        var operation: GroupOperation
        /// When it was first sent.
        var issuedAt: LocalTime
        /// Per peer: when to send next, and how many times it was sent.
        var awaiting: [PeerID: (next: LocalTime, attempts: Int)]
    }

    public let me: PeerID
    public let incarnation: UInt64
    public let configuration: Configuration
    public private(set) var log: OperationLog
    var pending: [OperationID: Pending] = [:]
    /// When the last anti-entropy round went (nil: the next one is due at once).
    var lastRound: LocalTime?
    /// The interval after the last round.
    var roundInterval: TimeSpan
    /// Something new since the last round (a new node has everything to learn).
    var activeSinceRound = true

    public init(me: PeerID, incarnation: UInt64, configuration: Configuration = .init()) {
        self.me = me
        self.incarnation = incarnation
        self.configuration = configuration
        self.roundInterval = configuration.antiEntropyInterval
        self.log = OperationLog(me: ReplicaID(peer: me, incarnation: incarnation), configuration: configuration.log)
    }

    /// The group state.
    public var state: GroupState { log.state }

    // MARK: - Issuing

    /// Issues an operation (see ``OperationLog/issue(item:command:reason:basis:at:originAt:basisBound:result:stampTime:)``)
    /// and queues what it sends for every peer in `peers`.
    public mutating func issue(
        item: ItemID?, command: OperationCommand, reason: CommandReason?, by: String? = nil, basis: PeerID, at: PeerTime, originAt: PeerTime,
        basisBound: TimeSpan, result: Timeline<PeerTime>?, stampTime: Int64, to peers: [PeerID], rtt: (PeerID) -> TimeSpan?, now: LocalTime
    ) -> [GroupOperation] {
        let ops = log.issue(
            item: item, command: command, reason: reason, by: by, basis: basis, at: at, originAt: originAt, basisBound: basisBound, result: result,
            stampTime: stampTime)
        for op in ops {
            var awaiting: [PeerID: (next: LocalTime, attempts: Int)] = [:]
            for p in peers { awaiting[p] = (now + retransmitDelay(rtt(p), attempts: 0), 1) }
            if !awaiting.isEmpty { pending[op.id] = Pending(operation: op, issuedAt: now, awaiting: awaiting) }
        }
        return ops
    }

    // MARK: - Receiving

    /// An operation from a peer (see ``OperationLog/receive(_:stampLimit:)``).
    public mutating func receive(_ op: GroupOperation, stampLimit: Int64) -> OperationLog.Outcome {
        log.receive(op, stampLimit: stampLimit)
    }

    public mutating func importRecord(_ record: ItemRecord) { log.importRecord(record) }
    public mutating func importRecord(_ record: CurrentRecord) { log.importRecord(record) }
    public mutating func importFolded(_ entries: [VersionVector.Entry]) { log.importFolded(entries) }
    public mutating func onDigest(_ vector: VersionVector, from replica: ReplicaID, complete: Bool = true) {
        log.onDigest(vector, from: replica, complete: complete)
    }
    public mutating func setMembers(_ replicas: Set<ReplicaID>) { log.setMembers(replicas) }
    public mutating func setRoster(_ devices: Set<PeerID>) { log.setRoster(devices) }

    /// `peer` has operation `id` (its `ack` arrived at `now`). Returns how long the peer took
    /// when the operation went to it only once (Karn's rule: an `ack` after a retransmission
    /// may answer either send), else nil.
    @discardableResult
    public mutating func acknowledged(_ id: OperationID, by peer: PeerID, now: LocalTime) -> TimeSpan? {
        guard var p = pending[id], let entry = p.awaiting[peer] else { return nil }
        p.awaiting[peer] = nil
        pending[id] = p.awaiting.isEmpty ? nil : p
        return entry.attempts == 1 ? now - p.issuedAt : nil
    }

    /// `peer` is gone: stop retransmitting to it (anti-entropy catches it up when it is back).
    public mutating func forget(_ peer: PeerID) {
        for id in Array(pending.keys) {
            pending[id]?.awaiting[peer] = nil
            if pending[id]?.awaiting.isEmpty == true { pending[id] = nil }
        }
    }

    // MARK: - Time

    /// Operations due for retransmission now, to whom.
    public mutating func retransmissions(now: LocalTime, rtt: (PeerID) -> TimeSpan?) -> [(GroupOperation, PeerID)] {
        var out: [(GroupOperation, PeerID)] = []
        for id in pending.keys.sorted() {
            guard var p = pending[id] else { continue }
            for (peer, entry) in p.awaiting.sorted(by: { $0.key < $1.key }) where entry.next <= now {
                if entry.attempts >= configuration.maxAttempts {
                    p.awaiting[peer] = nil
                    continue
                }
                out.append((p.operation, peer))
                p.awaiting[peer] = (now + retransmitDelay(rtt(peer), attempts: entry.attempts), entry.attempts + 1)
            }
            pending[id] = p.awaiting.isEmpty ? nil : p
        }
        return out
    }

    /// True when an anti-entropy round is due (and schedules the next one: `antiEntropyInterval`
    /// later if anything happened since the last round, else twice the last interval, at most
    /// `maxAntiEntropyInterval`).
    public mutating func antiEntropyDue(now: LocalTime) -> Bool {
        if let next = nextRound, now < next { return false }
        roundInterval = activeSinceRound ? configuration.antiEntropyInterval : min(roundInterval.doubled(1), max(configuration.maxAntiEntropyInterval, configuration.antiEntropyInterval))
        activeSinceRound = false
        lastRound = now
        return true
    }

    /// Something new reached or left this replica (an operation, a register, a digest or a
    /// participant record that differed, a peer met): the next round comes `antiEntropyInterval`
    /// after the last one (at once if that has passed), and rounds go that often until one finds
    /// nothing new.
    public mutating func noteActivity() {
        activeSinceRound = true
    }

    /// When the next round is due (nil: now): `roundInterval` after the last, or
    /// `antiEntropyInterval` after it once something new happened.
    private var nextRound: LocalTime? {
        lastRound.map { $0 + (activeSinceRound ? configuration.antiEntropyInterval : roundInterval) }
    }

    /// The interval after the last round (tests read it).
    public var currentAntiEntropyInterval: TimeSpan { roundInterval }

    /// When ``retransmissions(now:rtt:)`` or ``antiEntropyDue(now:)`` next has work.
    public func nextDeadline(now: LocalTime) -> LocalTime {
        var next = nextRound ?? now
        for p in pending.values {
            for entry in p.awaiting.values { next = min(next, entry.next) }
        }
        return max(next, now)
    }

    /// The local clock stepped: every retransmission and the anti-entropy round are due now.
    public mutating func rebase(now: LocalTime) {
        for (id, p) in pending {
            var p = p
            for (peer, entry) in p.awaiting { p.awaiting[peer] = (now, entry.attempts) }
            pending[id] = p
        }
        lastRound = nil
    }

    /// Operations awaiting acknowledgement (for status).
    public var pendingCount: Int { pending.count }

    // MARK: - Digests

    /// This replica's digest: its vector (members' replicas first, then the others most
    /// recently active, at most ``GroupDigest/maxEntries``) and its state's fingerprint. An entry
    /// left out only makes a peer send operations again, which are then duplicates.
    public var digest: GroupDigest {
        let members = log.members
        let entries = log.applied.entries.sorted { a, b in
            let (am, bm) = (members.contains(a.replica), members.contains(b.replica))
            return am != bm ? am : a.counter > b.counter
        }
        let kept = entries.prefix(GroupDigest.maxEntries).map { GroupDigest.Entry(replicaHash: $0.replica.wireHash, counter: $0.counter) }
        return GroupDigest(entries: kept.sorted { $0.replicaHash < $1.replicaHash }, fingerprint: log.state.fingerprint)
    }

    /// Replicas this one knows by their wire hash.
    public var knownReplicas: [UInt64: ReplicaID] {
        var out: [UInt64: ReplicaID] = [:]
        for e in log.applied.entries { out[e.replica.wireHash] = e.replica }
        for r in log.members { out[r.wireHash] = r }
        return out
    }

    private func retransmitDelay(_ rtt: TimeSpan?, attempts: Int) -> TimeSpan {
        let base = max(configuration.minRetransmit, 2 * (rtt ?? configuration.minRetransmit))
        return min(base.doubled(min(attempts, 10)), configuration.maxRetransmit)
    }
}
