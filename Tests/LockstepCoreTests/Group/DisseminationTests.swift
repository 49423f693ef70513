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
    static let timelines = LocalTimelines(me: me, clocks: PeerClocks(me: me), relays: [:])

    static func paused(at ns: Int64 = 0) -> Timeline<LocalTime> {
        Timeline(phase: .paused, anchorTime: LocalTime(ns: ns), position: MediaPosition(clamping: ns), rate: 1)
    }

    static func record(lamport: UInt64, origin: PeerID = bob) -> ItemRecord {
        ItemRecord(
            item: film, timeline: Timeline(phase: .paused, anchorTime: PeerTime(ns: 0), position: .zero, rate: 1), action: .pause,
            stamp: Stamp(lamport: lamport, origin: origin, incarnation: 1), version: VersionVector())
    }

    @Test("a proposal is stamped, applied, sent to every peer asking for an ack, and reported as a local change")
    func proposal() throws {
        var g = Dissemination(me: Self.me, incarnation: 4)
        let d = g.onProposal(.item(Self.film, ItemMetadata(), Self.paused(at: 7), .pause, nil), now: Self.t0, peers: [Self.bob, Self.carol], rtt: { _ in nil }, timelines: Self.timelines)
        let r = try #require(g.state.items[Self.film])
        #expect(r.stamp == Stamp(lamport: 1, origin: Self.me, incarnation: 4))
        #expect(r.timeline.anchorTime == PeerTime(ns: 7))
        #expect(d == [
            .send(.itemRecord(r, relay: nil, wantsAck: true), to: Self.bob), .send(.itemRecord(r, relay: nil, wantsAck: true), to: Self.carol),
            .changed(GroupChange(kind: .item(r), local: true)),
        ])
    }

    @Test("unacknowledged records are sent again after twice the round trip, and no more once acknowledged")
    func retransmission() throws {
        var g = Dissemination(me: Self.me, incarnation: 4)
        _ = g.onProposal(.current(Self.film, ItemMetadata()), now: Self.t0, peers: [Self.bob], rtt: { _ in .milliseconds(20) }, timelines: Self.timelines)
        let current = try #require(g.state.current)
        #expect(g.onTick(now: Self.t0 + .milliseconds(39), peers: [Self.bob], rtt: { _ in .milliseconds(20) }, timelines: Self.timelines).filter(\.isSend).count == 1)  // (the first anti-entropy round)
        let again = g.onTick(now: Self.t0 + .milliseconds(40), peers: [Self.bob], rtt: { _ in .milliseconds(20) }, timelines: Self.timelines)
        #expect(again.contains(.send(.currentRecord(current, wantsAck: true), to: Self.bob)))
        g.onAck(current.stamp, from: Self.bob)
        #expect(!g.onTick(now: Self.t0 + .seconds(10), peers: [Self.bob], rtt: { _ in nil }, timelines: Self.timelines).contains(.send(.currentRecord(current, wantsAck: true), to: Self.bob)))
    }

    @Test("a record from a peer is acknowledged and applied; a duplicate only acknowledged")
    func apply() {
        var g = Dissemination(me: Self.me, incarnation: 4)
        let r = Self.record(lamport: 9)
        #expect(g.onItemRecord(r, relay: nil, wantsAck: true, from: Self.bob, source: Self.source) == [
            .reply(.ack(stamp: r.stamp), to: Self.source), .changed(GroupChange(kind: .item(r), local: false)),
        ])
        #expect(g.onItemRecord(r, relay: nil, wantsAck: true, from: Self.bob, source: Self.source) == [.reply(.ack(stamp: r.stamp), to: Self.source)])
        #expect(g.replica.lamport == 9)
    }

    @Test("a record whose Lamport counter jumps more than 2^32 ahead is refused, not acknowledged, not applied")
    func lamportJump() {
        var g = Dissemination(me: Self.me, incarnation: 4)
        let r = Self.record(lamport: Limits.lamportJump + 1)
        #expect(g.onItemRecord(r, relay: nil, wantsAck: true, from: Self.bob, source: Self.source) == [.refused(.lamportTooFarAhead)])
        #expect(g.state.items.isEmpty && g.replica.lamport == 0)
    }

    @Test("a relayed record keeps the relay's anchor for nodes that cannot convert the origin's clock")
    func relayAnchor() {
        var g = Dissemination(me: Self.me, incarnation: 4)
        let r = Self.record(lamport: 2, origin: Self.carol)
        _ = g.onItemRecord(r, relay: RelayAnchor(anchorTime: PeerTime(ns: 55), errorBound: .microseconds(3)), wantsAck: false, from: Self.bob, source: Self.source)
        #expect(g.relays[r.stamp] == RelayedAnchor(via: Self.bob, anchorTime: PeerTime(ns: 55), bound: .microseconds(3)))
    }

    @Test("a digest that lacks records gets them, and our digest back when we lack something of theirs")
    func digest() {
        var g = Dissemination(me: Self.me, incarnation: 4)
        _ = g.onItemRecord(Self.record(lamport: 3), relay: nil, wantsAck: false, from: Self.bob, source: Self.source)
        let empty = g.onDigest(
            GroupDigest(current: nil, items: []), participants: [], wantsReply: false, from: Self.carol, source: Self.source, reachable: { _ in true },
            now: Self.t0, timelines: Self.timelines)
        #expect(empty.contains(.reply(.itemRecord(Self.record(lamport: 3), relay: nil, wantsAck: false), to: Self.source)))
        let newer = GroupDigest(current: Stamp(lamport: 8, origin: Self.carol, incarnation: 1), items: [])
        let answer = g.onDigest(newer, participants: [], wantsReply: false, from: Self.carol, source: Self.source, reachable: { _ in true }, now: Self.t0, timelines: Self.timelines)
        #expect(answer.contains { if case .reply(.digest, _) = $0 { true } else { false } })
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

    @Test("a lost peer's players no longer count")
    func lostPeer() {
        var g = Dissemination(me: Self.me, incarnation: 4)
        _ = g.onParticipant(ParticipantRecord(peer: Self.bob, incarnation: 1, version: 2, players: []), from: Self.bob, reachable: { _ in true })
        g.onPeerLost(Self.bob)
        #expect(g.participants[Self.bob] == nil)
    }
}

extension Dissemination.Directive {
    var isSend: Bool {
        if case .send = self { return true }
        return false
    }
}
