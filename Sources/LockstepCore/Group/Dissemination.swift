/// The replication protocol of one node: the group's history (``Replica``, ``OperationLog``)
/// and the participant records of every peer, spread to and merged from the other peers
/// (`Protocol/peer-protocol.md` §4.5–4.11, §5).
///
/// A pure instance: every input is an `on…` call with the current local time, every output a
/// ``Directive``. Which peers are reachable and their round trips are told by the owner
/// (``Node``) with each input that needs them; so are the group's members (for stability) and
/// the clock estimates the group clock reads (``onClockEstimates(_:)``).
///
/// Participant records are owned by their peer: a newer one (higher incarnation, then version)
/// replaces an older one; anyone may relay them, nobody may speak for this node.
public struct Dissemination: Sendable {
    /// What to do.
    public enum Directive: Sendable, Equatable {
        /// Send to a peer (by id: the owner knows its path).
        case send(PeerMessage, to: PeerID)
        /// Send back where a datagram came from (an ack, an answer to a digest).
        case reply(PeerMessage, to: Endpoint)
        /// The group state changed (an operation from this node or another, or registers).
        case changed(GroupChange)
        /// A peer's players changed.
        case participantsChanged
        /// A message from a peer was refused (counted by the shell).
        case refused(Refusal)
    }

    /// Why a message from a peer was refused.
    public enum Refusal: Sendable, Equatable {
        /// An operation the history refused (see ``OperationLog/Refusal``).
        case operation(OperationLog.Refusal)
        /// A participant record about this node, newer than its own: another peer speaking for it.
        case speaksForUs
        /// A checkpoint vector whose registers have not all arrived (lost, held back or
        /// reordered): the next anti-entropy round sends them again.
        case checkpointIncomplete
    }

    public let me: PeerID
    public let incarnation: UInt64
    public private(set) var replica: Replica
    public private(set) var clock: GroupClock
    /// Every peer's players, as they last said (this node's own included).
    public private(set) var participants: [PeerID: ParticipantRecord] = [:] {
        didSet { participantsVersion &+= 1 }
    }
    /// Counts the changes of ``participants`` (``GroupView/PresenceVersion``).
    public private(set) var participantsVersion: UInt64 = 0
    /// How long peers took to acknowledge this node's operations (for the lead of commands).
    public private(set) var ackDelays = AckDelays()
    /// What this node told its peers of its intakes.
    public private(set) var intakePublication: IntakePublication
    /// Where the next anti-entropy round starts in the sorted list of reachable peers.
    private var antiEntropyCursor = 0
    /// The registers each peer sent lately, merged: a checkpoint vector is taken only when they
    /// make the state its fingerprint names (``onCheckpointVector(_:fingerprint:from:)``).
    private var registersFrom: [PeerID: GroupState] = [:]
    /// Peers whose registers are kept at once, at most (members are fewer; a bound all the same).
    static let maxRegisterSenders = 64
    /// When each reachable peer was met (became reachable, or restarted).
    private var metAt: [PeerID: LocalTime] = [:]
    /// Others' participant records go to a peer met this long ago or more, not before. A peer
    /// just met is sent every record by its owner (``onPeerReachable(_:now:)``); at 64, the
    /// others' answers to its first digest were 63 copies of 62 records, about 3,900 datagrams
    /// to one agent at each meeting. Later rounds still repair a record a loss kept from it.
    public static let relayAfterMeeting: TimeSpan = .seconds(2)

    public init(me: PeerID, incarnation: UInt64, configuration: Replica.Configuration = .init()) {
        self.me = me
        self.incarnation = incarnation
        self.replica = Replica(me: me, incarnation: incarnation, configuration: configuration)
        self.clock = GroupClock(me: me)
        self.intakePublication = IntakePublication(stagger: IntakePublication.stagger(for: me))
        self.participants[me] = ParticipantRecord(peer: me, incarnation: incarnation, version: 0, players: [])
    }

    /// The group state.
    public var state: GroupState { replica.state }
    /// The group's history on this node.
    public var log: OperationLog { replica.log }

    // MARK: - Local inputs

    /// This node's command: an operation stamped on the group clock, its instants written on
    /// the basis's clock, applied, and sent to every peer in `peers`, who acknowledge it.
    public mutating func onProposal(_ proposal: Proposal, now: LocalTime, peers: [PeerID], rtt: (PeerID) -> TimeSpan?) -> [Directive] {
        let basis = clock.basis
        let (at, bound) = clock.onBasis(proposal.at)
        let result = proposal.result.map { $0.moved(to: at) }
        let reportsBefore = replica.log.reportsTotal
        let ops = replica.issue(
            item: proposal.item, command: proposal.command, reason: proposal.reason, by: proposal.by, basis: basis, at: at, originAt: PeerTime(ours: proposal.at),
            basisBound: bound.clamped(to: Limits.relayBoundNs), result: result, stampTime: clock.stampTime(at: now), to: peers, rtt: rtt, now: now)
        var out: [Directive] = []
        for op in ops { out += Self.sendOrder(peers, for: op.stamp).map { .send(.operation(op, wantsAck: true), to: $0) } }
        if !ops.isEmpty { replica.noteActivity() }
        if let op = ops.last {
            out.append(.changed(GroupChange(operation: op, local: true, concurrent: newReport(since: reportsBefore))))
        }
        return out
    }

    /// This node's players changed: its participant record goes to every peer in `peers`.
    public mutating func onLocalPlayers(_ players: [PlayerStatus], peers: [PeerID]) -> [Directive] {
        let mine = participants[me] ?? ParticipantRecord(peer: me, incarnation: incarnation, version: 0, players: [])
        guard mine.players != players else { return [] }
        let record = ParticipantRecord(peer: me, incarnation: incarnation, version: mine.version + 1, players: players)
        participants[me] = record
        replica.noteActivity()
        return peers.map { .send(.participant(record), to: $0) } + [.participantsChanged]
    }

    /// The latest estimates of the peers' clocks (direct or through the mesh), for the group clock.
    public mutating func onClockEstimates(_ estimates: [(PeerID, ClockEstimate)]) {
        for (peer, e) in estimates { clock.observe(peer, e) }
    }

    /// The group's members now (every known peer's current incarnation): whose knowledge
    /// decides when an operation is stable.
    public mutating func onMembers(_ members: Set<ReplicaID>) {
        replica.setMembers(members)
    }

    /// The group's devices (removed ones excluded): a replica holding none of the group's history
    /// folds only once it has heard them all (``OperationLog``, "Joining").
    public mutating func onRoster(_ devices: Set<PeerID>) {
        replica.setRoster(devices)
    }

    // MARK: - Peers

    /// A peer became reachable: exchange digests and introduce our players at once.
    public mutating func onPeerReachable(_ peer: PeerID, now: LocalTime) -> [Directive] {
        metAt[peer] = now
        replica.noteActivity()
        var out: [Directive] = [.send(.digest(replica.digest, wantsReply: true), to: peer)]
        out += participantDigests(wantsReply: true).map { .send($0, to: peer) }
        if let mine = participants[me] { out.append(.send(.participant(mine), to: peer)) }
        if intakePublication.published > .zero { out.append(.send(.intake(intakePublication.published), to: peer)) }
        return out
    }

    /// A peer is lost: no more retransmissions to it (anti-entropy catches it up when it is
    /// back), and its players no longer count.
    public mutating func onPeerLost(_ peer: PeerID) {
        metAt[peer] = nil
        replica.forget(peer)
        participants[peer] = nil
        registersFrom[peer] = nil
    }

    /// A peer restarted: its players are gone with its old life, and it is met anew.
    public mutating func onPeerGone(_ peer: PeerID, now: LocalTime) {
        if metAt[peer] != nil { metAt[peer] = now }
        participants[peer] = nil
        ackDelays.forget(peer)
        registersFrom[peer] = nil
    }

    /// A peer left the group for good: the group clock no longer reads its clock.
    public mutating func onPeerForgotten(_ peer: PeerID) {
        metAt[peer] = nil
        participants[peer] = nil
        ackDelays.forget(peer)
        clock.forget(peer)
        registersFrom[peer] = nil
    }

    // MARK: - Messages

    /// An operation from `sender` (via `source`).
    public mutating func onOperation(_ op: GroupOperation, wantsAck: Bool, from sender: PeerID, source: Endpoint, now: LocalTime) -> [Directive] {
        let reportsBefore = replica.log.reportsTotal
        let before = replica.state
        let stampNow = clock.stampTime(at: now)
        let outcome = replica.receive(op, stampLimit: stampNow.addingSaturating(Limits.stampLeadNs))
        let ack: [Directive] = wantsAck ? [.reply(.ack(op.id), to: source)] : []
        if outcome == .applied || outcome == .waiting { replica.noteActivity() }
        switch outcome {
        case .refused(let why):
            return [.refused(.operation(why))]
        case .waiting:
            // Not acknowledged: the origin sends it again, by when what it waits for is here.
            return []
        case .duplicate:
            return ack
        case .applied:
            // Pushed by its origin (not repaired by anti-entropy): how long it took to get here.
            if wantsAck, sender == op.stamp.origin {
                ackDelays.recordIntake(.nanoseconds(stampNow.subtractingSaturating(op.stamp.time)), at: now)
                intakePublication.onIntake(now: now)
            }
            let concurrent = newReport(since: reportsBefore)
            guard replica.state != before || concurrent != nil else { return ack }
            return ack + [.changed(GroupChange(operation: op, local: false, concurrent: concurrent))]
        }
    }

    /// Whether `op` is stamped further ahead of the group clock now than an operation may be
    /// (``Limits/stampLeadNs``): ``onOperation(_:wantsAck:from:source:now:)`` would refuse it.
    public func isStampedTooFarAhead(_ op: GroupOperation, now: LocalTime) -> Bool {
        op.stamp.time > clock.stampTime(at: now).addingSaturating(Limits.stampLeadNs)
    }

    /// A register of `sender`'s state.
    public mutating func onRegister(_ record: ItemRecord, from sender: PeerID) -> [Directive] {
        keepRegisters(from: sender) { $0.merge(record) }
        let before = replica.state
        replica.importRecord(record)
        guard replica.state != before else { return [] }
        replica.noteActivity()
        return [.changed(GroupChange(operation: nil, local: false))]
    }

    public mutating func onRegister(_ record: CurrentRecord, from sender: PeerID) -> [Directive] {
        keepRegisters(from: sender) { $0.merge(record) }
        let before = replica.state
        replica.importRecord(record)
        guard replica.state != before else { return [] }
        replica.noteActivity()
        return [.changed(GroupChange(operation: nil, local: false))]
    }

    /// Which operations the registers `sender` sent include; `fingerprint` is that of its state,
    /// the registers it sent. Taken only if the registers received from `sender` make exactly
    /// that state: counting operations as had without their effect (a register lost on the way,
    /// or held back by the reply budget) would let this replica fold its own operations on a
    /// checkpoint that lacks the group's timeline, and that register would then win everywhere
    /// by stamp (a restarted agent's `load` rewinding the group). Refused, the registers are
    /// forgotten; the next round brings them and the vector again.
    public mutating func onCheckpointVector(_ entries: [VersionVector.Entry], fingerprint: UInt64, from sender: PeerID) -> [Directive] {
        guard registersFrom[sender]?.fingerprint == fingerprint else {
            registersFrom[sender] = nil
            replica.noteActivity()
            return [.refused(.checkpointIncomplete)]
        }
        let before = replica.state
        replica.importFolded(entries)
        guard replica.state != before else { return [] }
        replica.noteActivity()
        return [.changed(GroupChange(operation: nil, local: false))]
    }

    private mutating func keepRegisters(from sender: PeerID, _ merge: (inout GroupState) -> Void) {
        if registersFrom[sender] == nil, registersFrom.count >= Self.maxRegisterSenders, let any = registersFrom.keys.min() {
            registersFrom[any] = nil
        }
        merge(&registersFrom[sender, default: GroupState()])
    }

    /// `peer` has operation `id` (its `ack` arrived at `now`): how long it took, when it can
    /// tell, goes to ``ackDelays``.
    public mutating func onAck(_ id: OperationID, from peer: PeerID, now: LocalTime) {
        if let delay = replica.acknowledged(id, by: peer, now: now) { ackDelays.record(delay, from: peer, at: now) }
    }

    /// `sender` published how long operations lately took to reach it.
    public mutating func onIntake(_ intake: TimeSpan, from sender: PeerID, now: LocalTime) {
        ackDelays.recordPublished(intake, from: sender, at: now)
    }

    /// This node's intakes told to every peer in `peers`, when they changed enough
    /// (``IntakePublication``).
    private mutating func publishIntake(now: LocalTime, peers: [PeerID]) -> [Directive] {
        guard let value = intakePublication.onCheck(worst: ackDelays.worstIntake(now: now), now: now) else { return [] }
        return peers.map { .send(.intake(value), to: $0) }
    }

    /// Anti-entropy: `sender` (running as `replica`) has what `digest` says. It gets the
    /// operations it lacks; if its state differs and it lacks operations folded here (it joined
    /// later), or it has every operation this node has and still differs, it gets this state's
    /// registers; it is asked for what this node lacks (our digest back).
    public mutating func onDigest(_ digest: GroupDigest, wantsReply: Bool, from sender: ReplicaID, source: Endpoint) -> [Directive] {
        let (theirs, unknown) = digest.vector(known: replica.knownReplicas)
        replica.onDigest(theirs, from: sender, complete: !unknown)
        let missing = replica.log.missing(from: theirs)
        var out: [Directive] = missing.map { .reply(.operation($0, wantsAck: false), to: source) }
        let state = replica.state
        // "Has every operation this node has" only if the digest names no replica unknown here:
        // one that does has more, and this state's registers would beat the group's by stamp.
        if digest.fingerprint != state.fingerprint, !theirs.covers(replica.log.folded) || (!unknown && theirs == replica.log.applied) {
            if let c = state.current { out.append(.reply(.currentRegister(c), to: source)) }
            out += state.records.map { .reply(.itemRegister($0), to: source) }
            out += replica.log.folded.entries.parts(of: PeerMessage.maxCheckpointEntries).map {
                .reply(.checkpointVector($0, fingerprint: state.fingerprint), to: source)
            }
        }
        let lacking = unknown || replica.log.lacksSomething(of: theirs)
        if wantsReply || lacking {
            out.append(.reply(.digest(replica.digest, wantsReply: false), to: source))
        }
        // A difference either way keeps rounds at their fastest until one finds none.
        if lacking || !missing.isEmpty || digest.fingerprint != state.fingerprint {
            replica.noteActivity()
        }
        return out
    }

    /// Anti-entropy of participant records: `sender` holds what `theirs` says of the peers after
    /// `after` (from the first when nil) up to its last entry if `more` parts follow, else to the
    /// end. It gets the records of that range it lacks (others' only once it was met
    /// ``relayAfterMeeting`` ago); `reachable` says whose records it may have that this node
    /// lacks (then our digest goes back).
    public mutating func onParticipantDigest(
        _ theirs: [ParticipantDigest], after: PeerID? = nil, more: Bool = false, wantsReply: Bool, from sender: PeerID, source: Endpoint,
        now: LocalTime, reachable: (PeerID) -> Bool
    ) -> [Directive] {
        var out: [Directive] = []
        var known: [PeerID: ParticipantDigest] = [:]
        for d in theirs { known[d.peer] = d }
        var theyHaveNewer = false
        let relaysOthers = metAt[sender].map { now - $0 >= Self.relayAfterMeeting } ?? false
        for record in participants.values.sorted(by: { $0.peer < $1.peer }) {
            if let d = known[record.peer], (d.incarnation, d.version) >= (record.incarnation, record.version) {
                if (d.incarnation, d.version) > (record.incarnation, record.version) { theyHaveNewer = true }
                continue
            }
            // A peer just met hears from each owner itself.
            guard record.peer == me || relaysOthers else { continue }
            // A digest split over several messages names the other peers in another part: only
            // those of this part's range are sent (the others go when their part arrives).
            let inRange = after.map { record.peer > $0 } ?? true
            let beforeEnd = !more || theirs.last.map { record.peer <= $0.peer } ?? true
            if inRange && beforeEnd {
                out.append(.reply(.participant(record), to: source))
            }
        }
        for d in theirs where participants[d.peer] == nil && d.peer != me && reachable(d.peer) {
            theyHaveNewer = true
        }
        if theyHaveNewer || !out.isEmpty { replica.noteActivity() }
        if wantsReply || theyHaveNewer {
            out += participantDigests(wantsReply: false).map { .reply($0, to: source) }
        }
        return out
    }

    /// A peer's players, from `sender` (the peer itself, or a relay). A peer speaks for itself;
    /// others only relay records of reachable peers. Nobody speaks for this node.
    public mutating func onParticipant(_ record: ParticipantRecord, from sender: PeerID, reachable: (PeerID) -> Bool) -> [Directive] {
        if record.peer == me {
            // Our own record relayed back is harmless; one newer than ours is someone speaking for us.
            return participants[me].map { record.supersedes($0) } ?? true ? [.refused(.speaksForUs)] : []
        }
        guard reachable(record.peer) || record.peer == sender else { return [] }
        guard participants[record.peer].map({ record.supersedes($0) }) ?? true else { return [] }
        participants[record.peer] = record
        replica.noteActivity()
        return [.participantsChanged]
    }

    // MARK: - Time

    /// Retransmissions due, the anti-entropy round when it is due, and this node's intakes when
    /// they changed enough to tell again (a withdrawal once they aged out).
    public mutating func onTick(now: LocalTime, peers: [PeerID], rtt: (PeerID) -> TimeSpan?) -> [Directive] {
        var out = publishIntake(now: now, peers: peers)
        let reachable = Set(peers)
        for (op, peer) in replica.retransmissions(now: now, rtt: rtt) where reachable.contains(peer) {
            out.append(.send(.operation(op, wantsAck: true), to: peer))
        }
        if replica.antiEntropyDue(now: now), !peers.isEmpty {
            let digest = PeerMessage.digest(replica.digest, wantsReply: false)
            let parts = participantDigests(wantsReply: false)
            let sorted = peers.sorted()
            let fanout = replica.configuration.antiEntropyFanout(peers: sorted.count)
            let start = antiEntropyCursor % sorted.count
            antiEntropyCursor = (start + fanout) % sorted.count
            for k in 0..<fanout {
                let peer = sorted[(start + k) % sorted.count]
                out.append(.send(digest, to: peer))
                out += parts.map { .send($0, to: peer) }
            }
        }
        return out
    }

    /// The local clock stepped: every retransmission and the anti-entropy round are due now, and
    /// the intakes go (read on the clock before the step, against estimates now being relearnt).
    public mutating func onLocalClockStep(now: LocalTime) {
        replica.rebase(now: now)
        ackDelays.forgetIntakes()
    }

    /// When ``onTick(now:peers:rtt:)`` next has work.
    public func nextDeadline(now: LocalTime) -> LocalTime {
        min(replica.nextDeadline(now: now), intakePublication.checkAt ?? .distantFuture)
    }

    // MARK: - Helpers

    /// `peers` in the order an operation goes to them: the list turned by the stamp's time, so
    /// that no peer is always the last of a burst (on a busy device a burst to 63 peers takes
    /// tens of milliseconds), and each peer's intakes (``AckDelays/recordIntake(_:at:)``) sample
    /// every place in it.
    static func sendOrder(_ peers: [PeerID], for stamp: Stamp) -> [PeerID] {
        guard peers.count > 1 else { return peers }
        let turn = Int(UInt64(bitPattern: stamp.time) % UInt64(peers.count))
        return Array(peers[turn...] + peers[..<turn])
    }

    /// The participant digest, in messages of at most ``PeerMessage/maxParticipantDigests``, each
    /// saying which range of peers it covers.
    func participantDigests(wantsReply: Bool) -> [PeerMessage] {
        let all = participants.values.map { ParticipantDigest(peer: $0.peer, incarnation: $0.incarnation, version: $0.version) }.sorted { $0.peer < $1.peer }
        return stride(from: 0, to: max(all.count, 1), by: PeerMessage.maxParticipantDigests).map { start in
            let end = min(start + PeerMessage.maxParticipantDigests, all.count)
            return .participantDigest(Array(all[start..<end]), after: start > 0 ? all[start - 1].peer : nil, more: end < all.count, wantsReply: wantsReply)
        }
    }

    private func newReport(since total: Int) -> ConcurrentCommands? {
        replica.log.reportsTotal > total ? replica.log.reports.last : nil
    }
}
