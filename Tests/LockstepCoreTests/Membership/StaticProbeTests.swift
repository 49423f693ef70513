import Testing

@testable import LockstepCore

/// ``Membership/StaticProbe``: how often a configured endpoint whose peer has not answered yet is
/// probed, and what an introduction of it does.
@Suite("Static endpoint probes")
struct StaticProbeTests {
    let me = PeerID(high: 0, low: 1)
    let alice = PeerID(high: 0, low: 2)
    let bob = PeerID(high: 0, low: 3)
    let configured = Endpoint(host: "10.0.0.2", port: 4000)!
    let other = Endpoint(host: "10.0.0.3", port: 4000)!
    let s = Nanos.second, ms = Nanos.millisecond

    func at(_ ns: Int64) -> LocalTime { LocalTime(ns: ns) }

    /// The instants at which `m` probes `endpoint` until `end`, asking at each deadline.
    func probes(_ m: inout Membership, of endpoint: Endpoint, from start: Int64 = 0, until end: Int64) -> [Int64] {
        var now = at(start), out: [Int64] = []
        while now.ns <= end {
            if m.dueProbes(now: now).contains(endpoint) { out.append(now.ns) }
            let next = m.nextDeadline(now: now)
            guard next > now else {
                Issue.record("no busy loop: the next deadline \(next.ns) is not after \(now.ns)")
                break
            }
            now = next
        }
        return out
    }

    @Test("a static endpoint that does not answer is probed at once, after 0.5 s, then twice the last wait, up to every 4 s")
    func backsOff() {
        var m = Membership(me: me)
        m.onStaticEndpoint(configured)
        #expect(probes(&m, of: configured, until: 20 * s) == [0, 500 * ms, 1_500 * ms, 3_500 * ms, 7_500 * ms, 11_500 * ms, 15_500 * ms, 19_500 * ms])
    }

    @Test("an introduction of an unanswered static endpoint probes it at once and starts its waits over, without an introduced entry; more within the first wait add nothing")
    func introductionProbesAtOnce() {
        var m = Membership(me: me)
        m.onStaticEndpoint(configured)
        #expect(probes(&m, of: configured, until: 8 * s) == [0, 500 * ms, 1_500 * ms, 3_500 * ms, 7_500 * ms])
        // At 9 s (next probe due at 11.5 s) a member says alice is there.
        let first = m.onIntroduced(alice, at: configured, now: at(9 * s))
        #expect(first.probe == configured)
        #expect(first.events.isEmpty)
        #expect(m.peers[alice] == nil, "the static endpoint stands for it")
        #expect(m.onIntroduced(alice, at: configured, now: at(9_100 * ms)).probe == nil, "another member's word within the first wait")
        #expect(m.onIntroduced(bob, at: configured, now: at(9_200 * ms)).probe == nil)
        #expect(probes(&m, of: configured, from: 9_100 * ms, until: 13 * s) == [9_500 * ms, 10_500 * ms, 12_500 * ms], "waits from the first again")
        #expect(m.onHeard(alice, incarnation: 1, from: configured, now: at(13 * s)) == [.stateChanged(alice, from: nil, to: .discovered), .stateChanged(alice, from: .discovered, to: .reachable)])
        #expect(m.unidentified.isEmpty)
        #expect(m.peers[alice]?.paths.map(\.source) == [.static])
    }

    @Test("an introduction at an address not configured still makes an introduced entry, probed at once")
    func otherAddressesAsBefore() {
        var m = Membership(me: me)
        m.onStaticEndpoint(configured)
        _ = m.dueProbes(now: at(0))
        let (_, probe) = m.onIntroduced(bob, at: other, now: at(100 * ms))
        #expect(probe == other)
        #expect(m.peers[bob]?.state == .resolved)
    }

    @Test("a step of the local clock has every unanswered static endpoint probed at once, its waits started over")
    func clockStepStartsOver() {
        var m = Membership(me: me)
        m.onStaticEndpoint(configured)
        #expect(probes(&m, of: configured, until: 8 * s).count == 5)
        m.onLocalClockStep(now: at(8 * s))
        #expect(probes(&m, of: configured, from: 8 * s, until: 10 * s) == [8 * s, 8_500 * ms, 9_500 * ms])
    }
}
