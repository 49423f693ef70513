import Testing

@testable import LockstepCore

@Suite("Membership")
struct MembershipTests {
    let me = PeerID(high: 0, low: 1)
    let alice = PeerID(high: 0, low: 2)
    let bob = PeerID(high: 0, low: 3)
    let v4 = Endpoint(host: "10.0.0.2", port: 4000)!
    let v6ll = Endpoint(host: "fe80::2%2", port: 4000)!
    let lo = Endpoint(host: "127.0.0.1", port: 4000)!
    let eth0 = Membership.Sighting(instance: "alice", interfaceIndex: 2)
    let s = Nanos.second, ms = Nanos.millisecond

    func at(_ ns: Int64) -> LocalTime { LocalTime(ns: ns) }

    func make(_ configure: (inout Membership.Configuration) -> Void = { _ in }) -> Membership {
        var c = Membership.Configuration()
        configure(&c)
        return Membership(me: me, configuration: c)
    }

    @Test("a sighting resolves a peer; an answer makes it reachable; 3 s of silence loses it; an answer brings it back")
    func lifecycle() {
        var m = make()
        #expect(m.onSighting(alice, name: "Alice", sighting: eth0, endpoints: [v4], now: at(0)) == [
            .stateChanged(alice, from: nil, to: .discovered), .stateChanged(alice, from: .discovered, to: .resolved),
        ])
        #expect(m.dueProbes(now: at(0)) == [v4])
        #expect(m.onHeard(alice, incarnation: 1, from: v4, now: at(10 * ms)) == [.stateChanged(alice, from: .resolved, to: .reachable)])
        #expect(m.onTick(now: at(3 * s)) == [])
        #expect(m.onTick(now: at(10 * ms + 3 * s)) == [.stateChanged(alice, from: .reachable, to: .lost)])
        #expect(m.onHeard(alice, incarnation: 1, from: v4, now: at(5 * s)) == [.stateChanged(alice, from: .lost, to: .reachable)])
        #expect(m.peers[alice]?.name == "Alice")
    }

    @Test("the reachable peers, sorted and as a set, follow every change of state, and their version counts only real changes")
    func reachableFollowsStates() {
        var m = make()
        #expect(m.reachable.isEmpty && m.reachableSet.isEmpty)
        let v0 = m.reachabilityVersion
        _ = m.onSighting(bob, name: "Bob", sighting: .init(instance: "bob", interfaceIndex: 2), endpoints: [Endpoint(host: "10.0.0.3", port: 4000)!], now: at(0))
        #expect(m.reachable.isEmpty && m.reachabilityVersion == v0, "resolved is not reachable")
        _ = m.onHeard(bob, incarnation: 1, from: Endpoint(host: "10.0.0.3", port: 4000)!, now: at(1 * ms))
        _ = m.onHeard(alice, incarnation: 1, from: v4, now: at(2 * ms))
        #expect(m.reachable == [alice, bob], "by id")
        #expect(m.reachableSet == [alice, bob] && m.isReachable(alice))
        let v1 = m.reachabilityVersion
        #expect(v1 > v0)
        _ = m.onHeard(alice, incarnation: 1, from: v4, now: at(500 * ms))
        #expect(m.reachabilityVersion == v1, "heard again: no change")
        #expect(m.onTick(now: at(1 * ms + 3 * s)) == [.stateChanged(bob, from: .reachable, to: .lost)])
        #expect(m.reachable == [alice] && !m.isReachable(bob) && m.reachabilityVersion > v1)
        #expect(m.onGoodbye(alice, now: at(4 * s)) == [.stateChanged(alice, from: .reachable, to: .lost)])
        #expect(m.reachable.isEmpty && m.reachableSet.isEmpty)
        let v2 = m.reachabilityVersion
        _ = m.onTick(now: at(4 * s + 600 * s))
        #expect(m.peers.isEmpty && m.reachabilityVersion == v2, "forgetting lost peers changes nothing reachable")
    }

    @Test("the peer timeout is configurable")
    func timeout() {
        var m = make { $0.lostAfter = .milliseconds(500) }
        _ = m.onHeard(alice, incarnation: 1, from: v4, now: at(0))
        #expect(m.onTick(now: at(499 * ms)) == [])
        #expect(m.onTick(now: at(500 * ms)) == [.stateChanged(alice, from: .reachable, to: .lost)])
    }

    @Test("when DNS-SD withdraws a peer that stays silent, it is lost after a short grace")
    func withdrawalLoses() {
        var m = make()
        _ = m.onSighting(alice, name: nil, sighting: eth0, endpoints: [v4], now: at(0))
        _ = m.onHeard(alice, incarnation: 1, from: v4, now: at(0))
        #expect(m.onWithdrawal(eth0, now: at(1 * s)) == [])
        #expect(m.dueProbes(now: at(1 * s)) == [v4])
        #expect(m.onTick(now: at(1 * s + 399 * ms)) == [])
        #expect(m.onTick(now: at(1 * s + 400 * ms)) == [.stateChanged(alice, from: .reachable, to: .lost)])
    }

    @Test("a rename shows as a withdrawal; a peer that still answers stays reachable")
    func renameSurvives() {
        var m = make()
        _ = m.onSighting(alice, name: nil, sighting: eth0, endpoints: [v4], now: at(0))
        _ = m.onHeard(alice, incarnation: 1, from: v4, now: at(0))
        _ = m.onWithdrawal(eth0, now: at(1 * s))
        _ = m.onHeard(alice, incarnation: 1, from: v4, now: at(1 * s + 5 * ms))
        _ = m.onSighting(alice, name: nil, sighting: .init(instance: "alice #2", interfaceIndex: 2), endpoints: [v4], now: at(1 * s + 50 * ms))
        #expect(m.onTick(now: at(2 * s)) == [])
        #expect(m.peers[alice]?.state == .reachable)
    }

    @Test("our own service and datagrams are never a peer")
    func ignoresSelf() {
        var m = make()
        #expect(m.onSighting(me, name: nil, sighting: eth0, endpoints: [v4], now: at(0)) == [])
        #expect(m.onHeard(me, incarnation: 1, from: v4, now: at(0)) == [])
        #expect(m.peers.isEmpty)
    }

    @Test("one peer seen on several interfaces and families is one peer with several paths, IPv4 preferred")
    func deduplicates() {
        var m = make()
        _ = m.onSighting(alice, name: nil, sighting: eth0, endpoints: [v6ll, v4], now: at(0))
        _ = m.onSighting(alice, name: nil, sighting: .init(instance: "alice", interfaceIndex: 3), endpoints: [Endpoint(host: "10.9.0.2", port: 4000)!], now: at(0))
        _ = m.onHeard(alice, incarnation: 1, from: v6ll, now: at(1 * ms))
        _ = m.onHeard(alice, incarnation: 1, from: v4, now: at(2 * ms))
        #expect(m.peers.count == 1)
        #expect(m.peers[alice]?.paths.count == 3)
        // The first path heard is kept while it stays fresh (no flapping), so prefer by rank on a fresh start:
        var fresh = make()
        _ = fresh.onSighting(alice, name: nil, sighting: eth0, endpoints: [v6ll, v4], now: at(0))
        _ = fresh.onHeard(alice, incarnation: 1, from: v4, now: at(1 * ms))
        #expect(fresh.endpoint(of: alice) == v4)
    }

    @Test("alternates are probed seldom while the preferred path is heard, every 500 ms once it is quiet for 1.5 s, and take over after 2 s")
    func failover() {
        var m = make()
        _ = m.onSighting(alice, name: nil, sighting: eth0, endpoints: [v4, v6ll], now: at(0))
        _ = m.onHeard(alice, incarnation: 1, from: v4, now: at(0))
        _ = m.onHello(alice, name: "alice")
        #expect(m.endpoint(of: alice) == v4)
        // Alternates are probed so that their addresses stay known-good, every 10 s while v4 speaks.
        #expect(m.dueProbes(now: at(10 * ms)).contains(v6ll))
        _ = m.onHeard(alice, incarnation: 1, from: v6ll, now: at(11 * ms))
        _ = m.onHeard(alice, incarnation: 1, from: v4, now: at(1_000 * ms))
        #expect(m.dueProbes(now: at(2_000 * ms)) == [])
        #expect(m.nextDeadline(now: at(2_000 * ms)) == at(2_500 * ms), "when v4 has been quiet for 1.5 s")
        // v4 goes quiet: from 1.5 s of silence the alternate is probed every 500 ms.
        #expect(m.dueProbes(now: at(2_500 * ms)) == [v6ll])
        #expect(m.dueProbes(now: at(2_700 * ms)) == [])
        _ = m.onHeard(alice, incarnation: 1, from: v6ll, now: at(2_510 * ms))
        _ = m.onTick(now: at(2_600 * ms))
        #expect(m.endpoint(of: alice) == v4, "not before 2 s of silence")
        _ = m.onTick(now: at(3_000 * ms))
        #expect(m.endpoint(of: alice) == v6ll)
        #expect(m.peers[alice]?.state == .reachable)
    }

    @Test("a static endpoint is probed until its peer answers, then it is that peer's path")
    func staticPeer() {
        var m = make()
        m.onStaticEndpoint(lo)
        #expect(m.dueProbes(now: at(0)) == [lo])
        #expect(m.dueProbes(now: at(100 * ms)) == [])
        #expect(m.dueProbes(now: at(500 * ms)) == [lo])
        _ = m.onHeard(bob, incarnation: 1, from: lo, now: at(600 * ms))
        #expect(m.unidentified.isEmpty)
        #expect(m.peers[bob]?.paths.map(\.source) == [.static])
        #expect(m.endpoint(of: bob) == lo)
    }

    @Test("a higher incarnation means the peer restarted; its old learned paths are dropped")
    func restart() {
        var m = make()
        let oldPort = Endpoint(host: "10.0.0.2", port: 5000)!
        _ = m.onHeard(alice, incarnation: 1, from: oldPort, now: at(0))
        let events = m.onHeard(alice, incarnation: 2, from: v4, now: at(1 * s))
        #expect(events.contains(.restarted(alice, incarnation: 2)))
        #expect(m.peers[alice]?.paths.map(\.endpoint) == [v4])
        #expect(m.peers[alice]?.incarnation == 2)
    }

    @Test("a forged higher incarnation gives way at once to the lower one the peer itself proves (sealed pairwise or under a session); one it proved stands, and a group-key datagram proves nothing")
    func forgedIncarnationGivesWay() {
        var m = make()
        let forger = Endpoint(host: "10.0.0.9", port: 6000)!
        _ = m.onHeard(alice, incarnation: 10, proven: true, from: v4, now: at(0))
        #expect(m.onHeard(alice, incarnation: 99, from: forger, now: at(100 * ms)).contains(.restarted(alice, incarnation: 99)))
        // Alice's own datagrams keep coming, so she is never silent: the lower one must win without it.
        #expect(m.onHeard(alice, incarnation: 10, from: v4, now: at(200 * ms)) == [])
        #expect(m.onHeard(alice, incarnation: 10, proven: true, from: v4, now: at(300 * ms)) == [.restarted(alice, incarnation: 10)])
        #expect(m.peers[alice]?.incarnation == 10)
        // A real restart, proven in turn: an older datagram it sealed itself does not take it back.
        _ = m.onHeard(alice, incarnation: 11, from: v4, now: at(1 * s))
        _ = m.onHeard(alice, incarnation: 11, proven: true, from: v4, now: at(1100 * ms))
        #expect(m.onHeard(alice, incarnation: 10, proven: true, from: v4, now: at(1200 * ms)) == [])
        #expect(m.peers[alice]?.incarnation == 11)
    }

    @Test("DNS-SD paths follow what DNS-SD shows: a restarted peer's old port disappears")
    func dnsPathsFollow() {
        var m = make()
        let oldPort = Endpoint(host: "10.0.0.2", port: 5000)!
        _ = m.onSighting(alice, name: nil, sighting: eth0, endpoints: [oldPort], now: at(0))
        _ = m.onWithdrawal(eth0, now: at(10 * s))
        _ = m.onSighting(alice, name: nil, sighting: eth0, endpoints: [v4], now: at(11 * s))
        #expect(m.peers[alice]?.paths.map(\.endpoint) == [v4])
    }

    @Test("peers beyond the limit are refused, not tracked")
    func maxPeers() {
        var m = make { $0.maxPeers = 1 }
        _ = m.onHeard(alice, incarnation: 1, from: v4, now: at(0))
        #expect(m.onHeard(bob, incarnation: 1, from: lo, now: at(0)) == [.refused(bob)])
        #expect(m.peers.count == 1)
    }

    @Test("a lost peer is forgotten after ten minutes")
    func forgets() {
        var m = make()
        _ = m.onHeard(alice, incarnation: 1, from: v4, now: at(0))
        _ = m.onTick(now: at(3 * s))
        #expect(m.onTick(now: at(3 * s + 600 * s)) == [.forgotten(alice)])
        #expect(m.peers.isEmpty)
    }

    @Test("a reachable peer's alternate path is next due at its probe while the preferred one is quiet, and not probed once the peer is reached through others")
    func alternateProbeDeadline() {
        var m = aliceWithAlternate()
        #expect(m.dueProbes(now: at(1_600 * ms)) == [v6ll])
        #expect(m.nextDeadline(now: at(1_600 * ms)) == at(2_100 * ms), "the alternate's next probe, before the failover at 2.5 s")
        m.onIndirect([alice], now: at(1_600 * ms))
        #expect(m.nextDeadline(now: at(1_600 * ms)) == at(2_500 * ms), "reached through others: no path probed")
    }

    @Test("the wake-up worked out only for the peers that changed follows every change, moving in or out of the set reached through others included, and is never later than the deadline")
    func wakeupFollowsChanges() {
        var m = aliceWithAlternate()
        _ = m.onHeard(bob, incarnation: 1, from: Endpoint(host: "10.0.0.3", port: 4000)!, now: at(0))
        _ = m.onHello(bob, name: "bob")
        _ = m.dueProbes(now: at(1_600 * ms))
        #expect(m.nextWakeup(now: at(1_600 * ms)) == at(2_100 * ms), "alice's alternate")
        m.onIndirect([alice], now: at(1_600 * ms))
        #expect(m.nextWakeup(now: at(1_600 * ms)) == at(2_500 * ms), "reached through others: her failover")
        m.onIndirect([], now: at(1_600 * ms))
        #expect(m.nextWakeup(now: at(1_600 * ms)) == at(2_100 * ms), "measured again")
        // Alice heard on her preferred path: her part moves later; bob's silence at 3 s comes first.
        _ = m.onHeard(alice, incarnation: 1, from: v4, now: at(1_700 * ms))
        #expect(m.nextWakeup(now: at(1_700 * ms)) == at(3 * s))
        // Bob says goodbye: lost, and probed every 500 ms on the path he used.
        _ = m.onGoodbye(bob, now: at(1_800 * ms))
        #expect(m.nextWakeup(now: at(1_800 * ms)) == at(2_300 * ms))
        #expect(m.nextWakeup(now: at(1_800 * ms)) == m.nextDeadline(now: at(1_800 * ms)))
        var now = at(1_800 * ms)
        for _ in 0..<50 {
            _ = m.onTick(now: now)
            _ = m.dueProbes(now: now)
            let wake = m.nextWakeup(now: now)
            #expect(wake == m.nextDeadline(now: now), "after a tick every peer's part is worked out anew")
            #expect(wake > now)
            now = wake
        }
    }

    /// Alice heard at 0 on IPv4, her IPv6 link-local path an alternate (failover after 2.5 s), named.
    func aliceWithAlternate() -> Membership {
        var m = make { $0.pathFailover = .milliseconds(2_500) }
        _ = m.onSighting(alice, name: nil, sighting: eth0, endpoints: [v4, v6ll], now: at(0))
        _ = m.onHeard(alice, incarnation: 1, from: v4, now: at(0))
        _ = m.onHello(alice, name: "alice")
        return m
    }

    @Test("after probing, the next deadline is in the future in every state (no busy loop)")
    func deadlinesAdvance() {
        var m = make()
        m.onStaticEndpoint(lo)
        _ = m.onSighting(alice, name: nil, sighting: eth0, endpoints: [v4, v6ll], now: at(0))
        _ = m.onSighting(bob, name: nil, sighting: .init(instance: "bob", interfaceIndex: 2), endpoints: [Endpoint(host: "10.0.0.3", port: 1)!], now: at(0))
        _ = m.onHeard(bob, incarnation: 1, from: Endpoint(host: "10.0.0.3", port: 1)!, now: at(0))
        _ = m.onWithdrawal(.init(instance: "bob", interfaceIndex: 2), now: at(0))
        var now = LocalTime(ns: 0)
        for _ in 0..<200 {
            _ = m.onTick(now: now)
            _ = m.dueProbes(now: now)
            _ = m.dueHellos(now: now)
            let next = m.nextDeadline(now: now)
            #expect(next > now)
            now = next
        }
        #expect(now.ns > 60 * s)
    }
}
