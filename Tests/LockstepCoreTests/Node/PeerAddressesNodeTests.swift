import Testing

@testable import LockstepCore

/// `peer_addresses` in one node (peer protocol §4.4a): who is told, when, and what is believed.
@Suite("Peer addresses in a node")
struct PeerAddressesNodeTests {
    static let me = PeerID(high: 0, low: 1)
    static let bob = PeerID(high: 0, low: 2)
    static let carol = PeerID(high: 0, low: 3)
    static let dave = PeerID(high: 0, low: 4)
    static let bobPath = Endpoint.v4(a: 10, b: 0, c: 0, d: 2, port: 4000)
    static let carolPath = Endpoint.v4(a: 10, b: 0, c: 0, d: 3, port: 4000)
    static let t0 = LocalTime(ns: 10_000_000_000)

    /// A node that reaches carol (DNS-SD showed her), then hears bob for the first time from an
    /// address nothing vouches for.
    static func nodeMeetingBob() -> (Node, [NodeDirective]) {
        var n = Node(identity: .init(peer: me, incarnation: 1, name: "den"))
        _ = n.onSighting(carol, name: "carol", sighting: .init(instance: "carol", interfaceIndex: 2), endpoints: [carolPath], now: t0)
        _ = n.onMessage(.hello(name: "carol", wantsReply: false), from: carol, incarnation: 5, source: carolPath, receivedAt: t0, now: t0)
        let met = n.onMessage(.hello(name: "bob", wantsReply: false), from: bob, incarnation: 7, source: bobPath, receivedAt: t0, now: t0)
        return (n, met)
    }

    static func told(_ d: [NodeDirective]) -> [PeerAddress]? {
        for case .send(.peerAddresses(let entries), bobPath) in d { return entries }
        return nil
    }

    @Test("a peer met from an unvalidated address is told where the others are only once it answers a challenge, and only once")
    func toldOnceValidated() {
        var (n, met) = Self.nodeMeetingBob()
        #expect(Self.told(met) == nil, "held until bob's address is validated: the shell would hold a large message back")
        let tick = n.onTick(now: Self.t0 + .milliseconds(1))
        guard let exchange = tick.lazy.compactMap({ d -> UInt32? in if case .sendClockRequest(let x, Self.bobPath, _) = d, x != 0 { x } else { nil } }).first else {
            Issue.record("no clock request to bob")
            return
        }
        #expect(Self.told(tick) == nil)
        n.onClockRequestSent(exchange: exchange, to: Self.bobPath, t1: Self.t0 + .milliseconds(1))
        let answered = n.onMessage(
            .clockReply(exchange: exchange, echo: (Self.t0 + .milliseconds(1)).ns, t2: PeerTime(ns: 1), t3: PeerTime(ns: 2)), from: Self.bob, incarnation: 7,
            source: Self.bobPath, receivedAt: Self.t0 + .milliseconds(2), now: Self.t0 + .milliseconds(2))
        #expect(Self.told(answered) == [PeerAddress(peer: Self.carol, endpoint: Self.carolPath)])
        #expect(Self.told(n.onTick(now: Self.t0 + .seconds(1))) == nil, "told once")
    }

    @Test("a peer owed the group's addresses at an unvalidated address is challenged at once and each second after, not on every datagram; its answer gets it told")
    func owedPeerChallenged() {
        var (n, met) = Self.nodeMeetingBob()
        let probe = NodeDirective.sendClockRequest(exchange: 0, to: Self.bobPath)
        #expect(met.filter { $0 == probe }.count == 1, "challenged at once, without waiting for a clock exchange (above 9 devices bob may not be measured)")
        let again = n.onMessage(.hello(name: "bob", wantsReply: false), from: Self.bob, incarnation: 7, source: Self.bobPath, receivedAt: Self.t0 + .milliseconds(500), now: Self.t0 + .milliseconds(500))
        #expect(!again.contains(probe), "not again within a second")
        let later = n.onTick(now: Self.t0 + .milliseconds(1_001))
        #expect(later.contains(probe), "again after a second without an answer")
        n.onClockRequestSent(exchange: 0, to: Self.bobPath, t1: Self.t0 + .milliseconds(1_001))
        let answered = n.onMessage(
            .clockReply(exchange: 0, echo: (Self.t0 + .milliseconds(1_001)).ns, t2: PeerTime(ns: 1), t3: PeerTime(ns: 2)), from: Self.bob, incarnation: 7,
            source: Self.bobPath, receivedAt: Self.t0 + .milliseconds(1_002), now: Self.t0 + .milliseconds(1_002))
        #expect(Self.told(answered) == [PeerAddress(peer: Self.carol, endpoint: Self.carolPath)])
        #expect(!n.onTick(now: Self.t0 + .seconds(3)).contains(probe), "validated: no more challenges")
    }

    @Test("from a peer not on this host, a loopback address is not believed; a usable one is probed at once")
    func loopbackOnlyFromLoopback() {
        var (n, _) = Self.nodeMeetingBob()
        let loopback = Endpoint.v4(a: 127, b: 0, c: 0, d: 1, port: 4001)
        let d = n.onMessage(.peerAddresses([PeerAddress(peer: Self.dave, endpoint: loopback)]), from: Self.bob, incarnation: 7, source: Self.bobPath, receivedAt: Self.t0, now: Self.t0)
        #expect(!d.contains(.sendClockRequest(exchange: 0, to: loopback)))
        #expect(n.membership.peers[Self.dave] == nil)
        let davePath = Endpoint.v4(a: 10, b: 0, c: 0, d: 4, port: 4000)
        let e = n.onMessage(.peerAddresses([PeerAddress(peer: Self.dave, endpoint: davePath)]), from: Self.bob, incarnation: 7, source: Self.bobPath, receivedAt: Self.t0, now: Self.t0)
        #expect(e.contains(.sendClockRequest(exchange: 0, to: davePath)))
        #expect(n.membership.peers[Self.dave]?.state == .resolved)
    }
}
