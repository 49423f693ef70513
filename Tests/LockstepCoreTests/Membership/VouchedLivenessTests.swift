import Testing

@testable import LockstepCore

/// A large group's peers that this node does not measure stay reachable on others' word.
@Suite("Vouched liveness")
struct VouchedLivenessTests {
    let me = PeerID(high: 0, low: 1)
    let alice = PeerID(high: 0, low: 2)
    let v4 = Endpoint(host: "10.0.0.2", port: 4000)!
    let v6ll = Endpoint(host: "fe80::2%2", port: 4000)!
    let eth0 = Membership.Sighting(instance: "alice", interfaceIndex: 2)
    let s = Nanos.second, ms = Nanos.millisecond

    func at(_ ns: Int64) -> LocalTime { LocalTime(ns: ns) }

    func reachableAlice() -> Membership {
        var m = Membership(me: me)
        _ = m.onSighting(alice, name: nil, sighting: eth0, endpoints: [v4, v6ll], now: at(0))
        _ = m.onHeard(alice, incarnation: 7, from: v4, now: at(0))
        _ = m.onHello(alice, name: "Alice")
        return m
    }

    @Test("an indirect peer vouched for every 3 s stays reachable, though never heard itself")
    func vouchedStaysReachable() {
        var m = reachableAlice()
        m.onIndirect([alice], now: at(0))
        for t in stride(from: 2 * s, through: 60 * s, by: Int(3 * s)) {
            m.onVouched(alice, incarnation: 7, now: at(t))
            #expect(m.onTick(now: at(t + 2 * s)) == [])
        }
        #expect(m.isReachable(alice))
    }

    @Test("an indirect peer no one vouches for is lost after vouchedLostAfter, not before")
    func unvouchedIsLost() {
        var m = reachableAlice()
        m.onIndirect([alice], now: at(0))
        m.onVouched(alice, incarnation: 7, now: at(2 * s))
        #expect(m.onTick(now: at(8 * s)) == [])
        #expect(m.nextDeadline(now: at(8 * s)) == at(9 * s))
        #expect(m.onTick(now: at(9 * s)) == [.stateChanged(alice, from: .reachable, to: .lost)])
    }

    @Test("vouching does not keep a peer this node measures: it must answer itself within lostAfter")
    func directPeerIgnoresVouches() {
        var m = reachableAlice()
        m.onVouched(alice, incarnation: 7, now: at(2 * s))
        #expect(m.onTick(now: at(3 * s)) == [.stateChanged(alice, from: .reachable, to: .lost)])
    }

    @Test("a peer measured again after others vouched for it has lostAfter from then to be heard on its new link, not from when it was last heard")
    func measuredAgainGetsLostAfter() {
        var m = reachableAlice()
        m.onIndirect([alice], now: at(0))
        m.onVouched(alice, incarnation: 7, now: at(5 * s))
        // The grid moves at 6 s: alice, last heard at 0, is measured again.
        m.onIndirect([], now: at(6 * s))
        #expect(m.onTick(now: at(6 * s)) == [], "not lost at once")
        #expect(m.onTick(now: at(8_900 * ms)) == [])
        #expect(m.onTick(now: at(9 * s)) == [.stateChanged(alice, from: .reachable, to: .lost)])

        var heard = reachableAlice()
        heard.onIndirect([alice], now: at(0))
        heard.onIndirect([], now: at(6 * s))
        _ = heard.onHeard(alice, incarnation: 7, from: v4, now: at(7 * s))
        #expect(heard.onTick(now: at(9_900 * ms)) == [], "heard on the new link: silent from then")
        #expect(heard.onTick(now: at(10 * s)) == [.stateChanged(alice, from: .reachable, to: .lost)])
    }

    @Test("a vouch for another incarnation, or for a lost peer, changes nothing")
    func wrongIncarnationOrLost() {
        var m = reachableAlice()
        m.onIndirect([alice], now: at(0))
        m.onVouched(alice, incarnation: 6, now: at(5 * s))
        m.onVouched(alice, incarnation: 8, now: at(5 * s))
        #expect(m.onTick(now: at(7 * s)) == [.stateChanged(alice, from: .reachable, to: .lost)])
        m.onVouched(alice, incarnation: 7, now: at(8 * s))
        #expect(!m.isReachable(alice), "only the peer itself brings a lost peer back")
    }

    @Test("an indirect peer's other paths are not probed; a measured peer's are")
    func noAlternateProbes() {
        var m = reachableAlice()
        #expect(m.dueProbes(now: at(3 * s / 2)) == [v6ll])
        var indirect = reachableAlice()
        indirect.onIndirect([alice], now: at(0))
        #expect(indirect.dueProbes(now: at(3 * s / 2)).isEmpty)
        #expect(indirect.dueProbes(now: at(10 * s)).isEmpty)
    }
}
