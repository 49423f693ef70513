import Testing

@testable import LockstepCore

/// The replication instance alone: inputs in, directives out, no network.
@Suite("Dissemination")
struct DisseminationTests {
    static let me = PeerID(high: 0, low: 1)
    static let bob = PeerID(high: 0, low: 2)
    static let carol = PeerID(high: 0, low: 3)
    static let source = Endpoint.v4(a: 10, b: 0, c: 0, d: 2, port: 4000)
    static let film = ItemID("film")!
    static let t0 = LocalTime(ns: 10_000_000_000)
    static let bobReplica = ReplicaID(peer: bob, incarnation: 1)

    static func paused(at ns: Int64 = 0) -> Timeline<LocalTime> {
        Timeline(phase: .paused, anchorTime: LocalTime(ns: ns), position: MediaPosition(clamping: ns), rate: 1)
    }

    /// Bob's operation number `seq` (his earlier ones as its heads).
    static func op(_ seq: UInt64, _ command: OperationCommand = .pause, time: Int64 = 1_000) -> GroupOperation {
        GroupOperation(
            stamp: Stamp(time: time + Int64(seq), origin: bob, incarnation: 1, seq: seq), heads: seq > 1 ? [OperationID(replica: bobReplica, seq: seq - 1)] : [],
            item: film, command: command, basis: bob, at: PeerTime(ns: time), originAt: PeerTime(ns: time))
    }

    @Test("a proposal becomes an operation stamped on the group clock, applied, sent to every peer asking for an ack, and reported as a local change")
    func proposal() throws {
        var g = Dissemination(me: Self.me, incarnation: 4)
        g.onMembers([Self.bobReplica, ReplicaID(peer: Self.carol, incarnation: 1)])
        let d = g.onProposal(Proposal(item: Self.film, command: .load(ItemMetadata(title: "Film")), at: LocalTime(ns: 7)), now: Self.t0, peers: [Self.bob, Self.carol], rtt: { _ in nil })
        let r = try #require(g.state.items[Self.film])
        #expect(g.state.current?.item == Self.film)
        #expect(r.stamp == Stamp(time: Self.t0.ns, origin: Self.me, incarnation: 4, seq: 1))
        #expect(r.clock == Self.me && r.timeline.anchorTime == PeerTime(ns: 7))
        let op = try #require(g.log.unstable.first)
        #expect(d == [
            .send(.operation(op, wantsAck: true), to: Self.bob), .send(.operation(op, wantsAck: true), to: Self.carol),
            .changed(GroupChange(operation: op, local: true)),
        ])
    }

    @Test("an operation goes to its peers in their order turned by its stamp's time: each peer in every place, none always last")
    func sendOrderTurns() {
        let peers = (2...5).map { PeerID(high: 0, low: UInt64($0)) }
        let stamp = { (t: Int64) in Stamp(time: t, origin: Self.me, incarnation: 1, seq: 1) }
        #expect(Dissemination.sendOrder(peers, for: stamp(8)) == peers)
        #expect(Dissemination.sendOrder(peers, for: stamp(9)) == Array(peers[1...] + peers[..<1]))
        let lasts = Set((0..<4).map { Dissemination.sendOrder(peers, for: stamp(Int64($0))).last! })
        #expect(lasts == Set(peers))
        #expect(Dissemination.sendOrder(peers, for: stamp(-3)).sorted() == peers, "any time, a whole list")
        #expect(Dissemination.sendOrder([Self.bob], for: stamp(7)) == [Self.bob])
    }

    @Test("unacknowledged operations are sent again after twice the round trip, and no more once acknowledged")
    func retransmission() throws {
        var g = Dissemination(me: Self.me, incarnation: 4)
        g.onMembers([Self.bobReplica])
        _ = g.onProposal(Proposal(item: Self.film, command: .load(ItemMetadata()), at: Self.t0), now: Self.t0, peers: [Self.bob], rtt: { _ in .milliseconds(20) })
        let op = try #require(g.log.unstable.first)
        #expect(g.onTick(now: Self.t0 + .milliseconds(39), peers: [Self.bob], rtt: { _ in .milliseconds(20) }).filter(\.isOperation).isEmpty)
        let again = g.onTick(now: Self.t0 + .milliseconds(40), peers: [Self.bob], rtt: { _ in .milliseconds(20) })
        #expect(again.contains(.send(.operation(op, wantsAck: true), to: Self.bob)))
        g.onAck(op.id, from: Self.bob, now: Self.t0 + .milliseconds(45))
        #expect(!g.onTick(now: Self.t0 + .seconds(10), peers: [Self.bob], rtt: { _ in nil }).contains(.send(.operation(op, wantsAck: true), to: Self.bob)))
        #expect(g.ackDelays.worst(of: Self.bob, now: Self.t0 + .seconds(10)) == nil, "sent twice: the ack may answer either send")
    }

    @Test("the acknowledgement of an operation sent once tells how long the peer took; a duplicate ack adds nothing; a peer gone takes its delays along")
    func ackDelays() throws {
        var g = Dissemination(me: Self.me, incarnation: 4)
        g.onMembers([Self.bobReplica, ReplicaID(peer: Self.carol, incarnation: 1)])
        _ = g.onProposal(Proposal(item: Self.film, command: .load(ItemMetadata()), at: Self.t0), now: Self.t0, peers: [Self.bob, Self.carol], rtt: { _ in nil })
        let op = try #require(g.log.unstable.first)
        g.onAck(op.id, from: Self.bob, now: Self.t0 + .milliseconds(7))
        g.onAck(op.id, from: Self.bob, now: Self.t0 + .milliseconds(90))
        #expect(g.ackDelays.worst(of: Self.bob, now: Self.t0 + .seconds(1)) == .milliseconds(7))
        #expect(g.ackDelays.worst(of: Self.carol, now: Self.t0 + .seconds(1)) == nil, "carol has not answered")
        g.onPeerGone(Self.bob, now: Self.t0)
        #expect(g.ackDelays.worst(of: Self.bob, now: Self.t0 + .seconds(1)) == nil)
    }

    @Test("an operation its origin pushed tells how long it took to arrive, on the group's time scale; one repaired by anti-entropy or relayed by another peer does not")
    func intake() {
        var g = Dissemination(me: Self.me, incarnation: 4)
        g.onMembers([Self.bobReplica])
        // No peer clock known: the group's time scale reads this node's clock, t0.
        let load = Self.op(1, .load(ItemMetadata()), time: Self.t0.ns - 30_000_001)
        _ = g.onOperation(load, wantsAck: false, from: Self.bob, source: Self.source, now: Self.t0)
        #expect(g.ackDelays.worstIntake(now: Self.t0) == nil, "anti-entropy's repair")
        _ = g.onOperation(Self.op(2, time: Self.t0.ns - 20_000_002), wantsAck: true, from: Self.carol, source: Self.source, now: Self.t0)
        #expect(g.ackDelays.worstIntake(now: Self.t0) == nil, "relayed")
        _ = g.onOperation(Self.op(3, .seek(MediaPosition(clamping: 5)), time: Self.t0.ns - 10_000_003), wantsAck: true, from: Self.bob, source: Self.source, now: Self.t0)
        #expect(g.ackDelays.worstIntake(now: Self.t0) == .milliseconds(10))
        g.onLocalClockStep(now: Self.t0)
        #expect(g.ackDelays.worstIntake(now: Self.t0) == nil, "read on the clock before its step")
    }

    @Test("a node tells every peer its intake once the burst has settled and its own stagger passed, tells a peer that becomes reachable, and keeps what peers tell it")
    func intakePublished() {
        var g = Dissemination(me: Self.me, incarnation: 4)
        g.onMembers([Self.bobReplica])
        let peers = [Self.bob, Self.carol]
        _ = g.onOperation(Self.op(1, time: Self.t0.ns - 40_000_000), wantsAck: true, from: Self.bob, source: Self.source, now: Self.t0)
        let due = Self.t0 + IntakePublication.settle + g.intakePublication.stagger
        #expect(g.intakePublication.stagger == IntakePublication.stagger(for: Self.me))
        #expect(g.nextDeadline(now: Self.t0) <= due, "a tick is due when it has settled")
        func intakes(_ d: [Dissemination.Directive]) -> [PeerID: TimeSpan] {
            Dictionary(uniqueKeysWithValues: d.compactMap { if case .send(.intake(let v), let to) = $0 { (to, v) } else { nil } })
        }
        #expect(intakes(g.onTick(now: due - .milliseconds(1), peers: peers, rtt: { _ in nil })).isEmpty, "not while the burst goes on")
        #expect(intakes(g.onTick(now: due, peers: peers, rtt: { _ in nil })) == [Self.bob: .milliseconds(50), Self.carol: .milliseconds(50)])
        #expect(intakes(g.onTick(now: Self.t0 + .seconds(2), peers: peers, rtt: { _ in nil })).isEmpty, "told once")
        #expect(intakes(g.onPeerReachable(Self.carol, now: Self.t0)) == [Self.carol: .milliseconds(50)])
        g.onIntake(.milliseconds(70), from: Self.carol, now: Self.t0)
        #expect(g.ackDelays.expected(for: Self.carol, now: Self.t0) == .milliseconds(70))
        g.onPeerGone(Self.carol, now: Self.t0)
        #expect(g.ackDelays.publishedIntake(of: Self.carol, now: Self.t0) == nil, "another life's")
    }

    @Test("an operation from a peer is acknowledged and applied; a duplicate only acknowledged; one waiting for an earlier one is not acknowledged")
    func apply() {
        var g = Dissemination(me: Self.me, incarnation: 4)
        g.onMembers([Self.bobReplica])
        let load = Self.op(1, .load(ItemMetadata())), pause = Self.op(2)
        #expect(g.onOperation(pause, wantsAck: true, from: Self.bob, source: Self.source, now: Self.t0) == [])
        #expect(g.onOperation(load, wantsAck: true, from: Self.bob, source: Self.source, now: Self.t0) == [
            .reply(.ack(load.id), to: Self.source), .changed(GroupChange(operation: load, local: false)),
        ])
        #expect(g.state.items[Self.film]?.stamp == load.stamp, "the waiting pause applied too (a pause of a paused timeline changes nothing)")
        #expect(g.onOperation(load, wantsAck: true, from: Self.bob, source: Self.source, now: Self.t0) == [.reply(.ack(load.id), to: Self.source)])
    }

    @Test("an operation stamped more than 10 s ahead of every known clock is refused, not acknowledged, not applied")
    func stampTooFarAhead() {
        var g = Dissemination(me: Self.me, incarnation: 4)
        let op = Self.op(1, .load(ItemMetadata()), time: Self.t0.ns + Limits.stampLeadNs + 1)
        #expect(g.onOperation(op, wantsAck: true, from: Self.bob, source: Self.source, now: Self.t0) == [.refused(.operation(.stampTooFarAhead))])
        #expect(g.state.items.isEmpty && g.log.time == .min)
    }

    @Test("a digest that lacks operations gets them, and our digest back when we lack something of theirs")
    func digest() {
        var g = Dissemination(me: Self.me, incarnation: 4)
        let carol = ReplicaID(peer: Self.carol, incarnation: 1)
        g.onMembers([Self.bobReplica, carol])
        let load = Self.op(1, .load(ItemMetadata()))
        _ = g.onOperation(load, wantsAck: false, from: Self.bob, source: Self.source, now: Self.t0)
        let empty = g.onDigest(GroupDigest(entries: [], fingerprint: GroupState().fingerprint), wantsReply: false, from: carol, source: Self.source)
        #expect(empty.contains(.reply(.operation(load, wantsAck: false), to: Self.source)))
        let newer = GroupDigest(entries: [.init(replicaHash: carol.wireHash, counter: 3)], fingerprint: 9)
        let answer = g.onDigest(newer, wantsReply: false, from: carol, source: Self.source)
        #expect(answer.contains { if case .reply(.digest, _) = $0 { true } else { false } })
    }

    @Test("a replica that lacks operations folded here, and differs, gets the state's registers; registers merge by stamp")
    func registers() throws {
        var g = Dissemination(me: Self.me, incarnation: 4)
        _ = g.onProposal(Proposal(item: Self.film, command: .load(ItemMetadata()), at: Self.t0), now: Self.t0, peers: [], rtt: { _ in nil })
        #expect(g.log.unstable.count == 1, "alone, it keeps its operations, to send them as such")
        g.onMembers([Self.bobReplica])
        _ = g.onDigest(GroupDigest(entries: [.init(replicaHash: ReplicaID(peer: Self.me, incarnation: 4).wireHash, counter: 1)], fingerprint: g.state.fingerprint), wantsReply: false, from: Self.bobReplica, source: Self.source)
        #expect(g.log.unstable.isEmpty, "once bob has it, it is stable and folds")
        let newcomer = ReplicaID(peer: Self.carol, incarnation: 1)
        let answer = g.onDigest(GroupDigest(entries: [], fingerprint: 1), wantsReply: false, from: newcomer, source: Self.source)
        let record = try #require(g.state.items[Self.film])
        #expect(answer.contains(.reply(.itemRegister(record), to: Self.source)))
        var other = Dissemination(me: Self.carol, incarnation: 1)
        #expect(other.onRegister(record, from: Self.me) == [.changed(GroupChange(operation: nil, local: false))])
        #expect(other.state.items[Self.film] == record)
        #expect(other.onRegister(record, from: Self.me) == [])
    }

    @Test("a restarted peer (a new replica) gets the folded state and what it includes; operations that depend on folded ones then apply there")
    func restartedPeer() throws {
        let old = ReplicaID(peer: Self.carol, incarnation: 1), new = ReplicaID(peer: Self.carol, incarnation: 2)
        var g = Dissemination(me: Self.me, incarnation: 4)
        g.onMembers([Self.bobReplica, old])
        let load = Self.op(1, .load(ItemMetadata())), play = Self.op(2, .play(rate: nil, waits: false))
        for op in [load, play] { _ = g.onOperation(op, wantsAck: false, from: Self.bob, source: Self.source, now: Self.t0) }
        g.onDigest(GroupDigest(entries: [.init(replicaHash: Self.bobReplica.wireHash, counter: 2)], fingerprint: g.state.fingerprint), wantsReply: false, from: old, source: Self.source)
            .forEach { _ in }
        #expect(g.log.folded.contains(play.id), "stable: every member had both")
        // Carol restarts: her new life knows nothing; bob then pauses, depending on his play.
        g.onMembers([Self.bobReplica, new])
        let pause = Self.op(3)
        _ = g.onOperation(pause, wantsAck: false, from: Self.bob, source: Self.source, now: Self.t0)
        var carol = Dissemination(me: Self.carol, incarnation: 2)
        carol.onMembers([Self.bobReplica, ReplicaID(peer: Self.me, incarnation: 4)])
        let answer = g.onDigest(GroupDigest(entries: [], fingerprint: carol.state.fingerprint), wantsReply: false, from: new, source: Self.source)
        for d in answer {
            guard case .reply(let m, _) = d else { continue }
            switch m {
            case .operation(let op, _): _ = carol.onOperation(op, wantsAck: false, from: Self.me, source: Self.source, now: Self.t0)
            case .itemRegister(let r): _ = carol.onRegister(r, from: Self.me)
            case .currentRegister(let r): _ = carol.onRegister(r, from: Self.me)
            case .checkpointVector(let e, let f): _ = carol.onCheckpointVector(e, fingerprint: f, from: Self.me)
            default: break
            }
        }
        #expect(answer.contains(.reply(.operation(pause, wantsAck: false), to: Self.source)), "the unstable pause goes as an operation")
        #expect(carol.log.waitingCount == 0, "the pause's head (the folded play) counts as had")
        #expect(carol.state == g.state)
        #expect(carol.state.items[Self.film]?.timeline.phase == .paused)
    }

    static let group = ReplicaID(peer: me, incarnation: 4)
    static let restarted = ReplicaID(peer: carol, incarnation: 2)

    /// This node with bob's load and play of the film, folded (bob's digest shows he has both) if `folded`.
    static func playingGroup(folded: Bool) -> Dissemination {
        var g = Dissemination(me: me, incarnation: 4)
        g.onMembers([bobReplica])
        for op in [op(1, .load(ItemMetadata())), op(2, .play(rate: nil, waits: false))] { _ = g.onOperation(op, wantsAck: false, from: bob, source: source, now: t0) }
        if folded {
            _ = g.onDigest(GroupDigest(entries: [.init(replicaHash: bobReplica.wireHash, counter: 2)], fingerprint: 0), wantsReply: false, from: bobReplica, source: source)
        }
        return g
    }

    /// Carol restarted (a new replica) and her player loaded the film before she knew anyone:
    /// her replica, and what it sent to `peers`.
    static func restartedCarol(sendingTo peers: [PeerID]) -> (Dissemination, [Dissemination.Directive]) {
        var carol = Dissemination(me: carol, incarnation: 2)
        let sent = carol.onProposal(Proposal(item: film, command: .load(ItemMetadata()), at: t0), now: t0, peers: peers, rtt: { _ in nil })
        return (carol, sent)
    }

    /// Hands the operations, registers and checkpoint vectors among `directives` to `d` (except
    /// the messages `lost` picks); returns what each checkpoint vector came to.
    @discardableResult
    static func deliver(_ directives: [Dissemination.Directive], to d: inout Dissemination, from sender: PeerID, lost: (PeerMessage) -> Bool = { _ in false }) -> [[Dissemination.Directive]] {
        var vectors: [[Dissemination.Directive]] = []
        for directive in directives {
            let message: PeerMessage
            switch directive {
            case .reply(let m, _), .send(let m, _): message = m
            default: continue
            }
            guard !lost(message) else { continue }
            switch message {
            case .operation(let op, let wantsAck): _ = d.onOperation(op, wantsAck: wantsAck, from: sender, source: source, now: t0)
            case .itemRegister(let r): _ = d.onRegister(r, from: sender)
            case .currentRegister(let r): _ = d.onRegister(r, from: sender)
            case .checkpointVector(let e, let f): vectors.append(d.onCheckpointVector(e, fingerprint: f, from: sender))
            default: break
            }
        }
        return vectors
    }

    static func isRegister(_ m: PeerMessage) -> Bool {
        switch m {
        case .itemRegister, .currentRegister: true
        default: false
        }
    }

    @Test("an agent restarted alone loads the group's item before it knows anyone: the load reaches the group as an operation and leaves its timeline playing")
    func loadWhileAlone() throws {
        var g = Self.playingGroup(folded: true)
        #expect(g.log.unstable.isEmpty && g.state.items[Self.film]?.timeline.phase == .playing)
        var (carol, _) = Self.restartedCarol(sendingTo: [])
        // They meet: each answers the other's digest.
        g.onMembers([Self.bobReplica, Self.restarted])
        carol.onMembers([Self.group, Self.bobReplica])
        Self.deliver(carol.onDigest(g.replica.digest, wantsReply: false, from: Self.group, source: Self.source), to: &g, from: Self.carol)
        Self.deliver(g.onDigest(carol.replica.digest, wantsReply: false, from: Self.restarted, source: Self.source), to: &carol, from: Self.me)
        #expect(g.state.items[Self.film]?.timeline.phase == .playing, "the group plays on")
        #expect(carol.state == g.state, "and the restarted agent holds the same")
    }

    @Test("a restarted agent whose load the group already has does not send its state back as registers when the group's digest also names operations it has not seen: the group plays on")
    func restartedLoadMeetsDigestFirst() throws {
        var g = Self.playingGroup(folded: false)
        var (carol, sent) = Self.restartedCarol(sendingTo: [Self.me])
        g.onMembers([Self.bobReplica, Self.restarted])
        carol.onMembers([Self.group])
        // Carol's load reaches the group as an operation, applied after the play: still playing.
        Self.deliver(sent, to: &g, from: Self.carol)
        #expect(g.state.items[Self.film]?.timeline.phase == .playing)
        // The group's digest reaches carol before anything of bob's: it names her load (which she
        // has) and bob's operations, of a replica she does not know. It does not show "exactly
        // what she has", so her lone load's register must not go back.
        let answer = carol.onDigest(g.replica.digest, wantsReply: false, from: Self.group, source: Self.source)
        let registers = answer.filter { if case .reply(let m, _) = $0 { Self.isRegister(m) } else { false } }
        #expect(registers.isEmpty, "sent \(registers)")
        #expect(answer.contains { if case .reply(.digest, _) = $0 { true } else { false } }, "she asks for what she lacks")
        Self.deliver(answer, to: &g, from: Self.carol)
        #expect(g.state.items[Self.film]?.timeline.phase == .playing, "the group plays on")
        Self.deliver(g.onDigest(carol.replica.digest, wantsReply: false, from: Self.restarted, source: Self.source), to: &carol, from: Self.me)
        #expect(carol.state == g.state, "and carol, given the group's history, holds the same")
    }

    @Test("a checkpoint vector whose registers were lost on the way is refused and counted: the restarted agent does not fold its load on a checkpoint without the group's timeline, and the group plays on")
    func checkpointVectorWithoutItsRegisters() throws {
        var g = Self.playingGroup(folded: true)
        #expect(g.log.unstable.isEmpty, "the group's history is folded")
        var (carol, sent) = Self.restartedCarol(sendingTo: [Self.me])
        g.onMembers([Self.bobReplica, Self.restarted])
        carol.onMembers([Self.group])
        Self.deliver(sent, to: &g, from: Self.carol)
        // Carol's digest draws the registers and the checkpoint vector; the registers are lost
        // (an unvalidated path's reply budget held them back), the vector arrives.
        let answer = g.onDigest(carol.replica.digest, wantsReply: false, from: Self.restarted, source: Self.source)
        #expect(answer.contains { if case .reply(.itemRegister, _) = $0 { true } else { false } })
        let refused = Self.deliver(answer, to: &carol, from: Self.me, lost: Self.isRegister)
        #expect(refused == [[.refused(.checkpointIncomplete)]])
        // Every member's digest now shows carol has all it needs: were the vector taken, her load
        // would fold alone and its register beat the group's timeline.
        _ = carol.onDigest(g.replica.digest, wantsReply: false, from: Self.group, source: Self.source)
        #expect(carol.log.unstable.count == 1, "her load stays an operation")
        // The next round brings registers and vector together: one state, playing.
        let taken = Self.deliver(g.onDigest(carol.replica.digest, wantsReply: false, from: Self.restarted, source: Self.source), to: &carol, from: Self.me)
        #expect(taken.count == 1 && !taken.contains([.refused(.checkpointIncomplete)]))
        Self.deliver(carol.onDigest(g.replica.digest, wantsReply: false, from: Self.group, source: Self.source), to: &g, from: Self.carol)
        #expect(g.state.items[Self.film]?.timeline.phase == .playing, "the group plays on")
        #expect(carol.state == g.state)
    }

    @Test("participant records: a peer speaks for itself, others relay only reachable peers' records, nobody speaks for us")
    func participants() {
        var g = Dissemination(me: Self.me, incarnation: 4)
        let bobs = ParticipantRecord(peer: Self.bob, incarnation: 1, version: 2, players: [])
        #expect(g.onParticipant(bobs, from: Self.bob, reachable: { _ in false }) == [.participantsChanged])
        #expect(g.onParticipant(bobs, from: Self.bob, reachable: { _ in false }) == [])
        let carols = ParticipantRecord(peer: Self.carol, incarnation: 1, version: 1, players: [])
        #expect(g.onParticipant(carols, from: Self.bob, reachable: { _ in false }) == [])
        #expect(g.onParticipant(carols, from: Self.bob, reachable: { _ in true }) == [.participantsChanged])
        #expect(g.onParticipant(ParticipantRecord(peer: Self.me, incarnation: 4, version: 0, players: []), from: Self.bob, reachable: { _ in true }) == [])
        #expect(g.onParticipant(ParticipantRecord(peer: Self.me, incarnation: 9, version: 0, players: []), from: Self.bob, reachable: { _ in true }) == [.refused(.speaksForUs)])
    }

    /// A node holding its own record and the records of 64 peers but `skip`.
    static func holding(_ me: PeerID, skip: UInt64? = nil) -> Dissemination {
        var g = Dissemination(me: me, incarnation: 1)
        for i in 100..<164 where UInt64(i) != skip {
            let peer = PeerID(high: 0, low: UInt64(i))
            _ = g.onParticipant(ParticipantRecord(peer: peer, incarnation: 1, version: 1, players: []), from: peer, reachable: { _ in true })
        }
        return g
    }

    /// Records sent in answer to each part of `sender`'s participant digest, at t0; the receiver
    /// met `peer` at `metAt` (nil: it did not meet it, or was told already).
    static func answers(of receiver: inout Dissemination, to sender: Dissemination, from peer: PeerID, metAt: LocalTime? = t0 - Dissemination.relayAfterMeeting) -> [[PeerID]] {
        if let metAt { _ = receiver.onPeerReachable(peer, now: metAt) }
        return sender.participantDigests(wantsReply: false).map { part in
            guard case .participantDigest(let entries, let after, let more, let wantsReply) = part else { return [] }
            return receiver.onParticipantDigest(entries, after: after, more: more, wantsReply: wantsReply, from: peer, source: Self.source, now: Self.t0, reachable: { _ in true })
                .compactMap { if case .reply(.participant(let r), _) = $0 { r.peer } else { nil } }
        }
    }

    @Test("a participant digest of 65 records goes in two parts, each saying its range: a receiver holding the same sends only its own, and one missing record draws only that record")
    func participantDigestParts() {
        let sender = Self.holding(Self.bob)
        let parts = sender.participantDigests(wantsReply: false)
        #expect(parts.count == 2)
        guard case .participantDigest(let first, nil, true, _) = parts[0], case .participantDigest(let second, let after?, false, _) = parts[1] else {
            Issue.record("parts without their ranges: \(parts)")
            return
        }
        #expect(first.count == 40 && second.count == 25 && after == first.last?.peer)
        // The same 64 records: only the receiver's own goes, in answer to the part whose range
        // holds it (before, every record of the first part also answered the second, every round).
        var same = Self.holding(Self.carol)
        #expect(Self.answers(of: &same, to: sender, from: Self.bob) == [[Self.carol], []])
        // The sender lacks one record of each part's range: each part draws only its own.
        for missing: UInt64 in [110, 150] {
            let lacking = Self.holding(Self.bob, skip: missing)
            var full = Self.holding(Self.carol)
            #expect(Self.answers(of: &full, to: lacking, from: Self.bob).flatMap { $0 } == [Self.carol, PeerID(high: 0, low: missing)])
        }
    }

    @Test("a peer met less than 2 s ago is sent only this node's own record for its digest (each owner sends it its own), others' once it was met 2 s ago; a peer that restarted is met anew")
    func relaysWaitAfterMeeting() {
        let newcomer = Dissemination(me: Self.bob, incarnation: 1)
        let everyone = Set((100..<164).map { PeerID(high: 0, low: UInt64($0)) } + [Self.carol])
        // Met just now, then 1.9 s ago: only carol's own record.
        for ago in [TimeSpan.zero, .milliseconds(1_900)] {
            var holder = Self.holding(Self.carol)
            #expect(Self.answers(of: &holder, to: newcomer, from: Self.bob, metAt: Self.t0 - ago).flatMap { $0 } == [Self.carol])
        }
        // Never met (its digest came before it was reachable): the same.
        var stranger = Self.holding(Self.carol)
        #expect(Self.answers(of: &stranger, to: newcomer, from: Self.bob, metAt: nil).flatMap { $0 } == [Self.carol])
        // Met 2 s ago: every record it lacks.
        var holder = Self.holding(Self.carol)
        #expect(Set(Self.answers(of: &holder, to: newcomer, from: Self.bob).flatMap { $0 }) == everyone)
        // It restarts: met anew, so only the own record again; lost and back, the same.
        holder.onPeerGone(Self.bob, now: Self.t0)
        #expect(Self.answers(of: &holder, to: newcomer, from: Self.bob, metAt: nil).flatMap { $0 } == [Self.carol])
        holder.onPeerLost(Self.bob)
        #expect(Self.answers(of: &holder, to: newcomer, from: Self.bob, metAt: nil).flatMap { $0 } == [Self.carol])
        // A record it holds newer than ours is still asked for at once, whenever it was met.
        let newer = ParticipantRecord(peer: PeerID(high: 0, low: 120), incarnation: 1, version: 5, players: [])
        var informed = Dissemination(me: Self.bob, incarnation: 1)
        _ = informed.onParticipant(newer, from: newer.peer, reachable: { _ in true })
        var behind = Self.holding(Self.carol)
        _ = behind.onPeerReachable(Self.bob, now: Self.t0)
        guard case .participantDigest(let entries, let after, let more, _) = informed.participantDigests(wantsReply: false)[0] else { return }
        let out = behind.onParticipantDigest(entries, after: after, more: more, wantsReply: false, from: Self.bob, source: Self.source, now: Self.t0, reachable: { _ in true })
        #expect(out.contains { if case .reply(.participantDigest, _) = $0 { true } else { false } }, "our digest goes back: it has a newer record")
    }

    @Test("this node's players are published only when they change")
    func localPlayers() {
        var g = Dissemination(me: Self.me, incarnation: 4)
        let p = PlayerStatus(playerID: 1, name: "tv", itemHash: nil, readiness: .loading)
        #expect(g.onLocalPlayers([p], peers: [Self.bob]).count == 2)
        #expect(g.onLocalPlayers([p], peers: [Self.bob]) == [])
        #expect(g.participants[Self.me]?.version == 1)
    }

    @Test("anti-entropy reaches every peer of a small group each round, and a large group's peers in turn, about log2 n a round")
    func antiEntropyFanout() {
        let config = Replica.Configuration()
        #expect((0...3).map { config.antiEntropyFanout(peers: $0) } == [0, 1, 2, 3])
        #expect(config.antiEntropyFanout(peers: 7) == 4)
        #expect(config.antiEntropyFanout(peers: 15) == 5)
        #expect(config.antiEntropyFanout(peers: 63) == 7)

        var g = Dissemination(me: Self.me, incarnation: 4)
        let peers = (10..<25).map { PeerID(high: 0, low: UInt64($0)) }
        var heard: [PeerID: Int] = [:]
        // An idle group's rounds space out: 1 s, then 2 s (see the backoff test).
        for at in [0, 1, 3] {
            let d = g.onTick(now: Self.t0 + .seconds(Int64(at)), peers: peers.shuffled(), rtt: { _ in nil })
            let to = d.compactMap { directive -> PeerID? in
                if case .send(.digest, let peer) = directive { return peer }
                return nil
            }
            #expect(to.count == 5 && Set(to).count == 5)
            for peer in to { heard[peer, default: 0] += 1 }
        }
        #expect(heard.count == 15 && heard.values.allSatisfy { $0 == 1 }, "three rounds of five reach each of 15 peers once")
        let quiet = g.onTick(now: Self.t0 + .milliseconds(6_500), peers: peers, rtt: { _ in nil })
        #expect(!quiet.contains { if case .send(.digest, _) = $0 { true } else { false } }, "no round before the interval")
    }

    /// The instants of the anti-entropy rounds `g` runs from `from` to `to`, ticking every 100 ms.
    static func rounds(_ g: inout Dissemination, from: LocalTime, to: LocalTime, peers: [PeerID]) -> [Int64] {
        var out: [Int64] = []
        var now = from
        while now <= to {
            if g.onTick(now: now, peers: peers, rtt: { _ in nil }).contains(where: { if case .send(.digest, _) = $0 { true } else { false } }) {
                out.append((now - Self.t0).ns / 1_000_000)
            }
            now = now + .milliseconds(100)
        }
        return out
    }

    @Test("an idle group's anti-entropy rounds space out, 1, 2, then every 4 s; a new operation brings them back to every second until a round finds nothing new")
    func antiEntropyBackoff() throws {
        var g = Dissemination(me: Self.me, incarnation: 4)
        g.onMembers([Self.bobReplica])
        let peers = [Self.bob]
        #expect(Self.rounds(&g, from: Self.t0, to: Self.t0 + .seconds(15), peers: peers) == [0, 1_000, 3_000, 7_000, 11_000, 15_000])
        #expect(g.replica.currentAntiEntropyInterval == .seconds(4))

        // 1.5 s after the last round, bob's operation arrives: the next round is due at once
        // (more than a second since the last), the one after a second later, then they space out.
        _ = g.onOperation(Self.op(1, .load(ItemMetadata())), wantsAck: true, from: Self.bob, source: Self.source, now: Self.t0 + .milliseconds(16_500))
        #expect(Self.rounds(&g, from: Self.t0 + .milliseconds(16_500), to: Self.t0 + .seconds(25), peers: peers) == [16_500, 17_500, 19_500, 23_500])
    }

    @Test("activity within a second of the last round brings the next one to a second after it, not sooner")
    func antiEntropyActivitySoonAfterARound() {
        var g = Dissemination(me: Self.me, incarnation: 4)
        let peers = [Self.bob]
        #expect(Self.rounds(&g, from: Self.t0, to: Self.t0 + .seconds(7), peers: peers) == [0, 1_000, 3_000, 7_000])
        // A player appears 300 ms after the 7 s round: the next round is a second after that one.
        _ = g.onLocalPlayers([PlayerStatus(playerID: 1, name: "tv", itemHash: nil, readiness: .loading)], peers: peers)
        #expect(Self.rounds(&g, from: Self.t0 + .milliseconds(7_300), to: Self.t0 + .seconds(12), peers: peers) == [8_000, 9_000, 11_000])
    }

    @Test("a digest that matches ours and a refused operation leave the rounds spacing out; a digest showing what we lack brings them back to every second")
    func antiEntropyDigestActivity() {
        var g = Dissemination(me: Self.me, incarnation: 4)
        g.onMembers([Self.bobReplica])
        let peers = [Self.bob]
        #expect(Self.rounds(&g, from: Self.t0, to: Self.t0 + .seconds(2), peers: peers) == [0, 1_000])
        #expect(g.replica.currentAntiEntropyInterval == .seconds(2))
        // The same digest: nothing to do, the rounds keep spacing out.
        _ = g.onDigest(g.replica.digest, wantsReply: false, from: Self.bobReplica, source: Self.source)
        #expect(Self.rounds(&g, from: Self.t0 + .milliseconds(2_100), to: Self.t0 + .seconds(7), peers: peers) == [3_000, 7_000])
        #expect(g.replica.currentAntiEntropyInterval == .seconds(4))
        // An operation refused (stamped too far ahead) changes nothing either.
        _ = g.onOperation(Self.op(1, .load(ItemMetadata()), time: Self.t0.ns + Limits.stampLeadNs * 2), wantsAck: true, from: Self.bob, source: Self.source, now: Self.t0 + .seconds(8))
        #expect(Self.rounds(&g, from: Self.t0 + .seconds(8), to: Self.t0 + .seconds(10), peers: peers) == [])
        // A digest showing bob has an operation we lack: we ask (our digest back), and rounds speed up.
        let newer = GroupDigest(entries: [.init(replicaHash: Self.bobReplica.wireHash, counter: 2)], fingerprint: 9)
        _ = g.onDigest(newer, wantsReply: false, from: Self.bobReplica, source: Self.source)
        #expect(Self.rounds(&g, from: Self.t0 + .milliseconds(10_100), to: Self.t0 + .seconds(12), peers: peers) == [10_100, 11_100])
    }

    @Test("a lost peer's players no longer count")
    func lostPeer() {
        var g = Dissemination(me: Self.me, incarnation: 4)
        _ = g.onParticipant(ParticipantRecord(peer: Self.bob, incarnation: 1, version: 2, players: []), from: Self.bob, reachable: { _ in true })
        g.onPeerLost(Self.bob)
        #expect(g.participants[Self.bob] == nil)
    }
}

extension Dissemination.Directive {
    var isOperation: Bool {
        if case .send(.operation, _) = self { return true }
        return false
    }
}
