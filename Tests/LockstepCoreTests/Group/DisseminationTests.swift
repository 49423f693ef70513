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
        g.onPeerGone(Self.bob)
        #expect(g.ackDelays.worst(of: Self.bob, now: Self.t0 + .seconds(1)) == nil)
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
        #expect(other.onRegister(record) == [.changed(GroupChange(operation: nil, local: false))])
        #expect(other.state.items[Self.film] == record)
        #expect(other.onRegister(record) == [])
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
            case .itemRegister(let r): _ = carol.onRegister(r)
            case .currentRegister(let r): _ = carol.onRegister(r)
            case .checkpointVector(let e): _ = carol.onCheckpointVector(e)
            default: break
            }
        }
        #expect(answer.contains(.reply(.operation(pause, wantsAck: false), to: Self.source)), "the unstable pause goes as an operation")
        #expect(carol.log.waitingCount == 0, "the pause's head (the folded play) counts as had")
        #expect(carol.state == g.state)
        #expect(carol.state.items[Self.film]?.timeline.phase == .paused)
    }

    @Test("an agent restarted alone loads the group's item before it knows anyone: the load reaches the group as an operation and leaves its timeline playing")
    func loadWhileAlone() throws {
        let group = ReplicaID(peer: Self.me, incarnation: 4), restarted = ReplicaID(peer: Self.carol, incarnation: 2)
        var g = Dissemination(me: Self.me, incarnation: 4)
        g.onMembers([Self.bobReplica])
        for op in [Self.op(1, .load(ItemMetadata())), Self.op(2, .play(rate: nil, waits: false))] { _ = g.onOperation(op, wantsAck: false, from: Self.bob, source: Self.source, now: Self.t0) }
        _ = g.onDigest(GroupDigest(entries: [.init(replicaHash: Self.bobReplica.wireHash, counter: 2)], fingerprint: 0), wantsReply: false, from: Self.bobReplica, source: Self.source)
        #expect(g.log.unstable.isEmpty && g.state.items[Self.film]?.timeline.phase == .playing)
        var carol = Dissemination(me: Self.carol, incarnation: 2)
        _ = carol.onProposal(Proposal(item: Self.film, command: .load(ItemMetadata()), at: Self.t0), now: Self.t0, peers: [], rtt: { _ in nil })
        // They meet: each answers the other's digest.
        g.onMembers([Self.bobReplica, restarted])
        carol.onMembers([group, Self.bobReplica])
        func deliver(_ directives: [Dissemination.Directive], to d: inout Dissemination, from sender: PeerID) {
            for case .reply(let m, _) in directives {
                switch m {
                case .operation(let op, _): _ = d.onOperation(op, wantsAck: false, from: sender, source: Self.source, now: Self.t0)
                case .itemRegister(let r): _ = d.onRegister(r)
                case .currentRegister(let r): _ = d.onRegister(r)
                case .checkpointVector(let e): _ = d.onCheckpointVector(e)
                default: break
                }
            }
        }
        deliver(carol.onDigest(g.replica.digest, wantsReply: false, from: group, source: Self.source), to: &g, from: Self.carol)
        deliver(g.onDigest(carol.replica.digest, wantsReply: false, from: restarted, source: Self.source), to: &carol, from: Self.me)
        #expect(g.state.items[Self.film]?.timeline.phase == .playing, "the group plays on")
        #expect(carol.state == g.state, "and the restarted agent holds the same")
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
