import Testing

@testable import LockstepCore

/// The router alone: one input, the directives it gives the shell (SWIM-style checks).
@Suite("Node")
struct NodeTests {
    static let me = PeerID(high: 0, low: 1)
    static let bob = PeerID(high: 0, low: 2)
    static let path = Endpoint.v4(a: 10, b: 0, c: 0, d: 2, port: 4000)
    static let t0 = LocalTime(ns: 10_000_000_000)

    static func node() -> Node {
        Node(identity: .init(peer: me, incarnation: 1, name: "den"))
    }

    @Test("a clock request is answered with its t1 echoed and its kernel receive time, to its source; the shell stamps t3")
    func clockRequest() {
        var n = Self.node()
        let d = n.onMessage(.clockRequest(exchange: 3, t1: PeerTime(ns: 42)), from: Self.bob, incarnation: 7, source: Self.path, receivedAt: Self.t0, now: Self.t0)
        #expect(d.contains(.sendClockReply(exchange: 3, echo: 42, t2: Self.t0, to: Self.path)))
    }

    @Test("a peer heard for the first time is reachable, greeted with a hello asking for its own, our digest and our players, and measured")
    func newPeer() {
        var m = Self.node()
        let e = m.onMessage(.hello(name: "bob", wantsReply: false), from: Self.bob, incarnation: 7, source: Self.path, receivedAt: Self.t0, now: Self.t0)
        #expect(e.contains(.membership(.stateChanged(Self.bob, from: .discovered, to: .reachable))))
        #expect(e.contains { if case .send(.digest(_, true), Self.path) = $0 { true } else { false } })
        #expect(e.contains { if case .send(.participant, Self.path) = $0 { true } else { false } })
        // Its hello arrived with the datagram that made it reachable: no need to ask for it.
        #expect(!e.contains(.send(.hello(name: "den", wantsReply: true), to: Self.path)))
        let tick = m.onTick(now: Self.t0 + .milliseconds(1))
        #expect(tick.contains { if case .sendClockRequest(let x, Self.path, _) = $0 { x != 0 } else { false } })
    }

    @Test("a datagram handled 5 s after it arrived (the agent fell behind) makes its sender reachable for lostAfter from then, not lost at the next tick")
    func lateDatagramNoFlap() {
        var m = Self.node()
        let handled = Self.t0 + .seconds(5)
        let e = m.onMessage(.hello(name: "bob", wantsReply: false), from: Self.bob, incarnation: 7, source: Self.path, receivedAt: Self.t0, now: handled)
        #expect(e.contains(.membership(.stateChanged(Self.bob, from: .discovered, to: .reachable))))
        let tick = m.onTick(now: handled + .milliseconds(1))
        #expect(!tick.contains(.membership(.stateChanged(Self.bob, from: .reachable, to: .lost))))
        #expect(m.membership.isReachable(Self.bob))
    }

    @Test("a peer whose hello has not come is asked for it, again after 0.2 s, then every second")
    func helloRetried() {
        var m = Self.node()
        let hello = NodeDirective.send(.hello(name: "den", wantsReply: true), to: Self.path)
        let e = m.onMessage(.ack(OperationID(replica: ReplicaID(peer: Self.bob, incarnation: 7), seq: 1)), from: Self.bob, incarnation: 7, source: Self.path, receivedAt: Self.t0, now: Self.t0)
        #expect(e.contains(hello))
        #expect(!m.onTick(now: Self.t0 + .milliseconds(199)).contains(hello))
        #expect(m.onTick(now: Self.t0 + .milliseconds(200)).contains(hello))
        #expect(!m.onTick(now: Self.t0 + .milliseconds(1_199)).contains(hello))
        #expect(m.onTick(now: Self.t0 + .milliseconds(1_200)).contains(hello))
        _ = m.onMessage(.hello(name: "bob", wantsReply: false), from: Self.bob, incarnation: 7, source: Self.path, receivedAt: Self.t0, now: Self.t0 + .milliseconds(1_200))
        #expect(!m.onTick(now: Self.t0 + .seconds(3)).contains(hello))
    }

    @Test("a player's request: its reply comes first, then what it caused")
    func replyFirst() {
        var n = Self.node()
        _ = n.onPlayerHello(id: 1, info: .init(name: "tv"), now: Self.t0)
        let d = n.onPlayerLoad(id: 1, item: ItemID("film")!, metadata: ItemMetadata(), solo: false, now: Self.t0)
        #expect(d.first == .reply(.loaded(.proposed, ItemID("film")!)))
        #expect(d.contains { if case .groupChanged = $0 { true } else { false } })
        #expect(d.contains { if case .tellPlayer(1, .timeline) = $0 { true } else { false } })
    }

    @Test("a peer found by discovery becomes a member for stability with its first datagram, under the incarnation it carries; a restart replaces it")
    func membersForStability() {
        var n = Self.node()
        _ = n.onSighting(Self.bob, name: "bob", sighting: .init(instance: "bob", interfaceIndex: 2), endpoints: [Self.path], now: Self.t0)
        #expect(n.group.log.members == [ReplicaID(peer: Self.me, incarnation: 1)])
        _ = n.onMessage(.ack(OperationID(replica: ReplicaID(peer: Self.me, incarnation: 1), seq: 1)), from: Self.bob, incarnation: 7, source: Self.path, receivedAt: Self.t0, now: Self.t0)
        #expect(n.group.log.members.contains(ReplicaID(peer: Self.bob, incarnation: 7)))
        _ = n.onMessage(.hello(name: "bob", wantsReply: false), from: Self.bob, incarnation: 8, source: Self.path, receivedAt: Self.t0 + .seconds(1), now: Self.t0 + .seconds(1))
        #expect(n.group.log.members == [ReplicaID(peer: Self.me, incarnation: 1), ReplicaID(peer: Self.bob, incarnation: 8)])
    }

    @Test("a goodbye or a clock report that any member could have sealed (group key) is refused and counted; sealed by the sender alone it is taken")
    func notProven() {
        var n = Self.node()
        _ = n.onMessage(.hello(name: "bob", wantsReply: false), from: Self.bob, incarnation: 7, source: Self.path, receivedAt: Self.t0, now: Self.t0)
        let report = ClockReport(entries: [])
        #expect(n.onMessage(.clockReport(report), from: Self.bob, incarnation: 7, source: Self.path, receivedAt: Self.t0, now: Self.t0).contains(.dropped(.notProven, from: Self.bob)))
        #expect(!n.onMessage(.clockReport(report), from: Self.bob, incarnation: 7, proven: true, source: Self.path, receivedAt: Self.t0, now: Self.t0).contains(.dropped(.notProven, from: Self.bob)))
        let forged = n.onMessage(.goodbye, from: Self.bob, incarnation: 7, source: Self.path, receivedAt: Self.t0, now: Self.t0)
        #expect(forged.contains(.dropped(.notProven, from: Self.bob)))
        #expect(n.membership.isReachable(Self.bob))
        let real = n.onMessage(.goodbye, from: Self.bob, incarnation: 7, proven: true, source: Self.path, receivedAt: Self.t0, now: Self.t0)
        #expect(real.contains(.membership(.stateChanged(Self.bob, from: .reachable, to: .lost))))
    }

    @Test("a peer's published intake is kept for the lead of this node's commands")
    func intakeKept() {
        var n = Self.node()
        _ = n.onMessage(.intake(.milliseconds(80)), from: Self.bob, incarnation: 7, source: Self.path, receivedAt: Self.t0, now: Self.t0)
        #expect(n.group.ackDelays.publishedIntake(of: Self.bob, now: Self.t0) == .milliseconds(80))
        #expect(n.group.ackDelays.expected(for: Self.bob, now: Self.t0) == .milliseconds(80))
    }

    @Test("a key message is not the core's: it changes nothing")
    func keysAreNotTheCores() {
        var n = Self.node()
        let d = n.onMessage(.keyAck(epoch: 3), from: Self.bob, incarnation: 7, source: Self.path, receivedAt: Self.t0, now: Self.t0)
        // Only meeting bob: greetings, and a challenge of his address (he is owed the others').
        #expect(!d.contains { d in
            switch d {
            case .send, .membership, .sendClockRequest(exchange: 0, _, _): false
            default: true
            }
        })
    }
}
