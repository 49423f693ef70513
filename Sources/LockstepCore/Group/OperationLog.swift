/// The group's history on one replica: operations delivered in causal order, folded in stamp
/// order into the group state, with version vectors that detect concurrent commands and decide
/// when an operation is stable (`Protocol/peer-protocol.md` §5).
///
/// - **Delivery.** An operation is applied once every operation it names as a head, and its
///   replica's previous one, are; until then it waits (at most ``Configuration/maxWaiting``).
///   So each replica's operations form a prefix 1…n here, and ``applied`` says exactly which
///   operations this replica has.
/// - **Order.** The state is ``checkpoint`` with the unstable operations (``log``) applied on
///   top in stamp order. An operation that sorts before others already applied is inserted and
///   the log replayed: the result is what applying every operation one by one in stamp order
///   gives, whatever order they arrived in.
/// - **Concurrency.** Each operation's causal past is a version vector, built from its heads'.
///   An arriving operation is concurrent with every logged one outside its past; those are
///   reported (``reports``).
/// - **Stability.** An operation is stable when every member (``setMembers(_:)``) has it, as
///   their operations' vectors and their digests show. Any later operation from a member is
///   then causally after it (and stamped later), so a stable prefix of the log folds into the
///   checkpoint for good. A log longer than ``Configuration/maxUnstable`` (a member that stays
///   away) folds its oldest operations anyway; an operation that then arrives stamped before
///   the checkpoint is applied right after it, and counted as ``late``.
/// - **Joining.** A replica with no member but itself folds nothing (up to the log's bound), so
///   that its commands reach the group as operations; nor does one that holds none of the group's
///   history (it has folded nothing and imported nothing) until it has heard every device of the
///   roster (``setRoster(_:)``) and no member's digest shows operations it lacks: the others it
///   met may be as new as itself (devices removed while it was away, which it cannot know yet),
///   or hold history whose registers are still on the way, and folding its own `load` before
///   those arrive would make it a register that wins by stamp when it meets the group, resetting
///   the group's timeline. When it meets a group whose history is
///   folded (or restarts, as a new replica), the folded states merge register
///   by register into the checkpoint (larger stamp wins, ``GroupState/merge(_:)``), and the log
///   replays on top: a restarted agent's first `load` then finds the group's timeline, as it
///   does everywhere else. Replicas that folded differently (past the bounds) hold registers of
///   equal stamps and different contents; exchanging them converges on one (by content hash).
public struct OperationLog: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// Unstable operations kept before the oldest fold anyway (about 1 KiB each at most).
        public var maxUnstable = 2048
        /// Operations waiting for one they depend on.
        public var maxWaiting = 1024
        /// Concurrency reports kept for `lockstep state`.
        public var maxReports = 32
        /// Replicas no longer members whose entries are kept (to recognise their operations as
        /// already had); beyond, the least recently active go.
        public var maxRetired = 256

        public init() {}
    }

    /// What an arriving operation did.
    public enum Outcome: Equatable, Sendable {
        /// Applied (with any waiting operations it released).
        case applied
        /// Already here.
        case duplicate
        /// Waits for operations it depends on.
        case waiting
        /// Refused (counted by the shell).
        case refused(Refusal)
    }

    /// Why an operation was refused (named as the shell counts it, `dropped_<raw value>`).
    public enum Refusal: String, Sendable, Equatable {
        /// Stamped further ahead of the most advanced known clock than ``Limits/stampLeadNs``: it
        /// would drag every later stamp along (the hybrid clock's poison, review finding H2).
        case stampTooFarAhead = "stamp_too_far_ahead"
        /// Names more heads than an operation may, or a head of its own replica ahead of itself.
        case invalidHeads = "invalid_heads"
        /// From a replica that is no longer a member, stamped before the checkpoint: a stale copy.
        case retired = "retired_replica"
    }

    struct Entry: Sendable {
        var op: GroupOperation
        /// Its causal past, itself included (exact for every unstable operation).
        var past: VersionVector
        /// Arrived after the checkpoint had passed its stamp: ordered right after the checkpoint.
        var late: Bool
        var orderKey: (Int, Stamp) { (late ? 0 : 1, op.stamp) }
    }

    public let me: ReplicaID
    public let configuration: Configuration
    /// Stable operations, folded.
    public private(set) var checkpoint = GroupState()
    /// Which operations the checkpoint holds.
    public private(set) var folded = VersionVector()
    public private(set) var lastFolded: Stamp?
    /// Unstable operations, in the order they apply: late ones first (right after the
    /// checkpoint), then stamp order.
    var log: [Entry] = []
    /// Which operations this replica has (folded or logged).
    public private(set) var applied = VersionVector()
    var waiting: [OperationID: GroupOperation] = [:]
    /// The group state: the checkpoint with the log replayed on top.
    public private(set) var state = GroupState()
    public private(set) var members: Set<ReplicaID> = []
    /// The devices of the group (removed ones excluded), when the shell knows them.
    public private(set) var roster: Set<PeerID>?
    /// This replica has folded, or imported another's folded state: it holds the group's history.
    public private(set) var holdsHistory = false
    /// Members whose latest digest showed operations this replica lacks.
    private var ahead: Set<ReplicaID> = []
    /// What each member is known to have.
    var knowledge: [ReplicaID: VersionVector] = [:]
    /// The latest operations seen, none in another's past: the heads of the next one.
    public private(set) var frontier: Set<OperationID> = []
    /// The largest stamp time seen (the hybrid logical clock).
    public private(set) var time: Int64 = .min
    /// Replicas that left, with the last time (stamp time) they were active.
    var retired: [ReplicaID: Int64] = [:]
    public private(set) var reports: [ConcurrentCommands] = []
    /// Reports made since the start (``reports`` keeps the latest).
    public private(set) var reportsTotal = 0
    /// Operations applied after the checkpoint had passed them.
    public private(set) var late = 0
    /// Operations folded before they were stable (the log was full).
    public private(set) var forcedFolds = 0
    /// Waiting operations dropped (the wait list was full); anti-entropy brings them again.
    public private(set) var waitingDropped = 0

    public init(me: ReplicaID, configuration: Configuration = .init()) {
        self.me = me
        self.configuration = configuration
        self.members = [me]
    }

    /// Unstable operations, in the order they apply.
    public var unstable: [GroupOperation] { log.map(\.op) }
    public var waitingCount: Int { waiting.count }

    // MARK: - Issuing

    /// Issues this replica's next operation: stamped at `stampTime` (the group clock, raised
    /// above every stamp seen), with the frontier as heads, and applied. Returns what to send,
    /// in order: a `join` first when the frontier is wider than an operation with an item may
    /// carry.
    public mutating func issue(
        item: ItemID?, command: OperationCommand, reason: CommandReason?, by: String? = nil, basis: PeerID, at: PeerTime, originAt: PeerTime,
        basisBound: TimeSpan, result: Timeline<PeerTime>?, stampTime: Int64
    ) -> [GroupOperation] {
        var out: [GroupOperation] = []
        func next(_ item: ItemID?, _ command: OperationCommand, heads: [OperationID]) -> GroupOperation {
            let t = max(stampTime, time == .min ? stampTime : time.addingSaturating(1))
            let stamp = Stamp(time: t, origin: me.peer, incarnation: me.incarnation, seq: applied[me] + 1)
            return GroupOperation(
                stamp: stamp, heads: heads, item: item, command: command, reason: reason, by: command == .join ? nil : by, basis: basis, at: at,
                originAt: originAt, basisBound: basisBound, result: result)
        }
        var heads = frontier.sorted()
        let limit = item == nil ? GroupOperation.maxHeads : GroupOperation.maxInlineHeads
        while heads.count > limit {
            // A join carries the oldest part of the frontier; it becomes a head itself.
            let join = next(nil, .join, heads: Array(heads.prefix(GroupOperation.maxHeads)))
            deliver(join)
            out.append(join)
            heads = Array(heads.dropFirst(GroupOperation.maxHeads)) + [join.id]
        }
        let op = next(item, command, heads: heads)
        deliver(op)
        out.append(op)
        foldStable()
        return out
    }

    // MARK: - Receiving

    /// An operation from a peer. `stampLimit` is the most advanced known clock's reading now
    /// plus ``Limits/stampLeadNs``: an operation stamped later is refused.
    public mutating func receive(_ op: GroupOperation, stampLimit: Int64) -> Outcome {
        if applied.contains(op.id) || waiting[op.id] != nil { return .duplicate }
        // A replica that is no longer a member cannot issue: an old operation of it that the
        // checkpoint has passed can only be a stale copy.
        if !members.contains(op.stamp.replica), let f = lastFolded, op.stamp < f, retired[op.stamp.replica] != nil { return .refused(.retired) }
        guard op.stamp.time <= stampLimit else { return .refused(.stampTooFarAhead) }
        guard op.heads.count <= GroupOperation.maxHeads, op.stamp.seq >= 1,
            !op.heads.contains(where: { $0.replica == op.stamp.replica && $0.seq >= op.stamp.seq })
        else { return .refused(.invalidHeads) }
        guard isDeliverable(op) else {
            if waiting.count >= configuration.maxWaiting, let newest = waiting.values.max(by: { $0.stamp < $1.stamp }) {
                // Keep the oldest (they release the others); anti-entropy brings the rest again.
                waiting[newest.id] = nil
                waitingDropped += 1
            }
            waiting[op.id] = op
            return .waiting
        }
        deliver(op)
        releaseWaiting()
        foldStable()
        return .applied
    }

    private func isDeliverable(_ op: GroupOperation) -> Bool {
        applied[op.stamp.replica] == op.stamp.seq - 1 && op.heads.allSatisfy { applied.contains($0) }
    }

    private mutating func releaseWaiting() {
        var progress = true
        while progress {
            progress = false
            for op in waiting.values.sorted(by: { $0.stamp < $1.stamp }) where isDeliverable(op) {
                waiting[op.id] = nil
                deliver(op)
                progress = true
            }
        }
    }

    /// Applies a deliverable operation: its past, concurrency report, place in the order.
    private mutating func deliver(_ op: GroupOperation) {
        var past = VersionVector()
        for h in op.heads {
            if let e = log.first(where: { $0.op.id == h }) { past.merge(e.past) } else { past.merge(folded) }
        }
        past[op.stamp.replica] = op.stamp.seq
        applied[op.stamp.replica] = op.stamp.seq
        time = max(time, op.stamp.time)
        frontier = frontier.filter { !past.contains($0) }
        frontier.insert(op.id)
        if members.contains(op.stamp.replica) { knowledge[op.stamp.replica, default: VersionVector()].merge(past) }

        if op.command != .join, op.command.action != nil {
            let others = log.filter { !past.contains($0.op.id) && $0.op.command != .join }
            if !others.isEmpty {
                let summary = { (o: GroupOperation) in ConcurrentCommands.Command(stamp: o.stamp, item: o.item, action: o.command.action ?? .load, by: o.by) }
                reportsTotal += 1
                reports.append(ConcurrentCommands(command: summary(op), with: others.map { summary($0.op) }))
                if reports.count > configuration.maxReports { reports.removeFirst(reports.count - configuration.maxReports) }
            }
        }

        let isLate = lastFolded.map { op.stamp < $0 } ?? false
        if isLate { late += 1 }
        let entry = Entry(op: op, past: past, late: isLate)
        if let last = log.last, last.orderKey > entry.orderKey {
            let i = log.firstIndex { $0.orderKey > entry.orderKey } ?? log.endIndex
            log.insert(entry, at: i)
            replay()
        } else {
            log.append(entry)
            state.apply(op)
        }
    }

    private mutating func replay() {
        var s = checkpoint
        for e in log { s.apply(e.op) }
        state = s
    }

    // MARK: - Stability

    /// The replicas whose knowledge decides stability: every member's current incarnation
    /// (this replica is always one). Replicas that stop being members are retired.
    public mutating func setMembers(_ replicas: Set<ReplicaID>) {
        let now = replicas.union([me])
        for gone in members.subtracting(now) { retired[gone] = time }
        for r in now { retired[r] = nil }
        members = now
        knowledge = knowledge.filter { members.contains($0.key) }
        ahead.formIntersection(members)
        pruneRetired()
        foldStable()
    }

    /// The group's devices now (removed ones excluded): see the type's doc, "Joining".
    public mutating func setRoster(_ devices: Set<PeerID>) {
        roster = devices
        foldStable()
    }

    /// What `replica` says it has (its digest; `complete` false if it named replicas this one
    /// does not know, left out of `vector`). Used once this replica has every operation of
    /// `replica` the digest counts: knowledge of ours it had before issuing those.
    public mutating func onDigest(_ vector: VersionVector, from replica: ReplicaID, complete: Bool = true) {
        guard members.contains(replica) else { return }
        if complete && applied.covers(vector) { ahead.remove(replica) } else { ahead.insert(replica) }
        guard applied[replica] >= vector[replica] else { return }
        knowledge[replica, default: VersionVector()].merge(vector)
        foldStable()
    }

    /// Every member has it. A replica that has met no member keeps its operations (up to the
    /// log's bound): when it meets the group they go as operations, applied in stamp order like
    /// any other, rather than as a folded state whose registers would win by stamp alone (a
    /// restarted agent's first `load` would otherwise reset the group's timeline).
    ///
    /// A replica holding none of the group's history also waits to have heard every device of the
    /// roster, and for no member's digest to show operations it lacks: a member holding history
    /// has its registers on the way (the type's doc, "Joining").
    private func isStable(_ id: OperationID) -> Bool {
        members.count > 1 && (holdsHistory || (heardRoster && ahead.isEmpty)) && members.allSatisfy { m in m == me ? applied.contains(id) : knowledge[m]?.contains(id) ?? false }
    }

    private var heardRoster: Bool {
        guard let roster else { return true }
        let heard = Set(members.map(\.peer))
        return roster.allSatisfy { $0 == me.peer || heard.contains($0) }
    }

    private mutating func foldStable() {
        while let first = log.first, isStable(first.op.id) || log.count > configuration.maxUnstable {
            if !isStable(first.op.id) { forcedFolds += 1 }
            checkpoint.apply(first.op)
            folded[first.op.stamp.replica] = max(folded[first.op.stamp.replica], first.op.stamp.seq)
            lastFolded = max(lastFolded ?? first.op.stamp, first.op.stamp)
            log.removeFirst()
            holdsHistory = true
        }
    }

    private mutating func pruneRetired() {
        guard retired.count > configuration.maxRetired else { return }
        for (r, _) in retired.sorted(by: { $0.value < $1.value }).prefix(retired.count - configuration.maxRetired) {
            retired[r] = nil
            applied.remove(r)
            folded.remove(r)
        }
    }

    // MARK: - Anti-entropy

    /// The operations this replica holds that a replica with `vector` lacks, in an order it can
    /// apply them in.
    public func missing(from vector: VersionVector) -> [GroupOperation] {
        log.map(\.op).filter { !vector.contains($0.id) }.sorted { $0.stamp < $1.stamp }
    }

    /// True if a replica with `vector` has operations this one lacks.
    public func lacksSomething(of vector: VersionVector) -> Bool { !applied.covers(vector) }

    /// A register of another replica's folded state, merged into the checkpoint (see the type's doc).
    public mutating func importRecord(_ record: ItemRecord) {
        time = max(time, record.stamp.time)
        holdsHistory = true
        guard checkpoint.merge(record) else { return }
        replay()
    }

    public mutating func importRecord(_ record: CurrentRecord) {
        time = max(time, record.stamp.time)
        holdsHistory = true
        guard checkpoint.merge(record) else { return }
        replay()
    }

    /// The operations another replica's registers (imported with it) include: this replica
    /// counts them as had, so that operations depending on them apply, and digests stop asking
    /// for them. Its own replica's entry is its own business.
    ///
    /// Operations it covers that this replica still logs are in the imported registers already:
    /// they leave the log (replayed on top of newer registers they would undo them).
    public mutating func importFolded(_ entries: [VersionVector.Entry]) {
        var covered = VersionVector()
        for e in entries where e.replica != me && e.counter > folded[e.replica] {
            covered[e.replica] = e.counter
            applied[e.replica] = max(applied[e.replica], e.counter)
            folded[e.replica] = e.counter
        }
        guard !covered.counters.isEmpty else { return }
        holdsHistory = true
        let before = log.count
        log.removeAll { covered.contains($0.op.id) }
        for id in waiting.keys where covered.contains(id) { waiting[id] = nil }
        if log.count != before { replay() }
        releaseWaiting()
        foldStable()
    }
}
