import Testing

@testable import LockstepCore

/// ``Membership/onIntroduced(_:at:now:)``: a peer another member says it reaches, at the address
/// it gives (peer protocol §4.4a).
@Suite("Introduced peers")
struct IntroducedPeerTests {
    let me = PeerID(high: 0, low: 1)
    let alice = PeerID(high: 0, low: 2)
    let bob = PeerID(high: 0, low: 3)
    let told = Endpoint(host: "10.0.0.2", port: 4000)!
    let shown = Endpoint(host: "10.0.0.9", port: 4000)!
    let s = Nanos.second, ms = Nanos.millisecond

    func at(_ ns: Int64) -> LocalTime { LocalTime(ns: ns) }

    @Test("an unknown peer is resolved at the address given and probed at once (the probe passes the anti-amplification budget); its answer makes it reachable")
    func unknownPeerProbed() {
        var m = Membership(me: me)
        let (events, probe) = m.onIntroduced(alice, at: told, now: at(0))
        #expect(PathValidation.isVouched(told, by: m))
        #expect(events == [.stateChanged(alice, from: nil, to: .discovered), .stateChanged(alice, from: .discovered, to: .resolved)])
        #expect(probe == told)
        #expect(m.dueProbes(now: at(1 * ms)) == [], "already probed")
        #expect(m.dueProbes(now: at(500 * ms)) == [told], "then as any stranger")
        #expect(m.peers[alice]?.vetted == false, "discovery does not vouch for it")
        #expect(m.onHeard(alice, incarnation: 1, from: told, now: at(600 * ms)) == [.stateChanged(alice, from: .resolved, to: .reachable)])
        #expect(!PathValidation.isVouched(told, by: m), "heard: its address must answer a challenge like any other")
    }

    @Test("a peer with a path already, a reachable one, this node, and an unusable address are left alone")
    func leftAlone() {
        var m = Membership(me: me)
        _ = m.onSighting(alice, name: "Alice", sighting: .init(instance: "alice", interfaceIndex: 2), endpoints: [shown], now: at(0))
        #expect(m.onIntroduced(alice, at: told, now: at(1 * ms)).probe == nil)
        #expect(m.peers[alice]?.paths.map(\.endpoint) == [shown], "a lie cannot divert a peer DNS-SD resolved")
        _ = m.onHeard(bob, incarnation: 1, from: shown.with(port: 4001), now: at(0))
        #expect(m.onIntroduced(bob, at: told, now: at(1 * ms)).probe == nil)
        #expect(m.onIntroduced(me, at: told, now: at(1 * ms)).probe == nil)
        #expect(m.onIntroduced(PeerID(high: 0, low: 9), at: told.with(port: 0), now: at(1 * ms)).probe == nil)
        #expect(m.onIntroduced(PeerID(high: 0, low: 9), at: Endpoint(host: "fe80::2%2", port: 4000)!, now: at(1 * ms)).probe == nil)
        #expect(m.peers.count == 2)
    }

    @Test("one that never answers and DNS-SD never names is probed for 3 s, then forgotten; a sighting meanwhile keeps it")
    func neverAnswering() {
        var m = Membership(me: me)
        _ = m.onIntroduced(alice, at: told, now: at(0))
        _ = m.onIntroduced(bob, at: told.with(port: 4001), now: at(0))
        _ = m.onSighting(bob, name: "Bob", sighting: .init(instance: "bob", interfaceIndex: 2), endpoints: [shown], now: at(1 * s))
        let giveUp = m.configuration.strangers.introducedProbesFor.ns
        #expect(giveUp == 3 * s)
        #expect(m.nextDeadline(now: at(2_900 * ms)) <= at(giveUp))
        #expect(m.dueProbes(now: at(2_500 * ms)).contains(told), "probed meanwhile")
        #expect(m.onTick(now: at(giveUp - 1)) == [])
        #expect(m.onTick(now: at(giveUp)) == [.forgotten(alice)])
        #expect(m.peers[bob] != nil, "DNS-SD names it: it stays as any stranger would")
    }

    @Test("introductions count against the strangers' budget: past it, the oldest stranger gives way")
    func strangersBudget() {
        var m = Membership(me: me)
        let max = m.configuration.strangers.maxUnheard
        for i in 0..<(max + 3) {
            _ = m.onIntroduced(PeerID(high: 1, low: UInt64(i)), at: .v4(a: 10, b: 1, c: 0, d: UInt8(i + 1), port: 4000), now: at(Int64(i) * ms))
        }
        #expect(m.peers.count == max)
        #expect(m.peers[PeerID(high: 1, low: 0)] == nil)
        #expect(m.peers[PeerID(high: 1, low: UInt64(max + 2))] != nil)
    }
}
