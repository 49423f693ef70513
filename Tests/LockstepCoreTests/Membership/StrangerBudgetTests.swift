import Testing

@testable import LockstepCore

/// Review finding M5: with no key, fake DNS-SD services (the group tag is public) cannot fill the
/// peer table, keep real members out, or aim a stream of probes at chosen addresses.
@Suite("Strangers named by DNS-SD")
struct StrangerBudgetTests {
    static let me = PeerID(high: 1, low: 1)
    static let t0 = LocalTime(ns: 1_000_000_000_000)

    static func fake(_ i: Int) -> PeerID { PeerID(high: 0xfa4e, low: UInt64(i)) }
    static func target(_ i: Int, path: Int = 0) -> Endpoint { .v4(a: 203, b: 0, c: UInt8(path), d: UInt8(i & 0xff), port: 9) }

    /// Membership after `count` fake services appeared, each with `paths` addresses.
    static func flooded(count: Int, paths: Int = 1, configure: (inout Membership.Configuration) -> Void = { _ in }) -> Membership {
        var c = Membership.Configuration()
        configure(&c)
        var m = Membership(me: me, configuration: c)
        for i in 0..<count {
            _ = m.onSighting(
                fake(i), name: "x\(i)", sighting: .init(instance: "x\(i)", interfaceIndex: 2), endpoints: (0..<paths).map { target(i, path: $0) }, now: t0)
        }
        return m
    }

    @Test("seventy fake services: only a few are tracked, and a real member is reachable at once")
    func seventyFakes() {
        var m = Self.flooded(count: 70)
        #expect(m.peers.count == m.configuration.strangers.maxUnheard)
        let real = PeerID(high: 7, low: 7)
        let events = m.onHeard(real, incarnation: 1, from: Self.target(200), now: Self.t0 + .milliseconds(10))
        #expect(!events.contains(.refused(real)))
        #expect(m.isReachable(real))
    }

    @Test("when strangers fill the peer table, an authenticated newcomer takes the oldest stranger's place")
    func strangerGivesWay() {
        var m = Self.flooded(count: 4) { $0.maxPeers = 4; $0.strangers.maxUnheard = 4 }
        #expect(m.peers.count == 4)
        let real = PeerID(high: 7, low: 7)
        let events = m.onHeard(real, incarnation: 1, from: Self.target(200), now: Self.t0 + .milliseconds(10))
        #expect(events.contains(.forgotten(Self.fake(0))))
        #expect(m.isReachable(real))
        // Authenticated peers never give way to one another: the next is refused.
        var full = Membership(me: Self.me, configuration: { var c = Membership.Configuration(); c.maxPeers = 1; return c }())
        _ = full.onHeard(real, incarnation: 1, from: Self.target(200), now: Self.t0)
        let other = PeerID(high: 8, low: 8)
        #expect(full.onHeard(other, incarnation: 1, from: Self.target(201), now: Self.t0) == [.refused(other)])
    }

    @Test("a member that gave way as a stranger is still vouched for by DNS-SD when it speaks, unless its instance was withdrawn meanwhile")
    func evictedMemberStaysVetted() {
        // A large group appears at once: the first two sightings give way to later ones.
        let count = Membership.Configuration().strangers.maxUnheard + 2
        var m = Self.flooded(count: count)
        #expect(m.peers[Self.fake(0)] == nil && m.peers[Self.fake(1)] == nil)
        // Both speak; DNS-SD will not name them again. Fake 1's instance went away meanwhile.
        _ = m.onWithdrawal(.init(instance: "x1", interfaceIndex: 2), now: Self.t0 + .milliseconds(5))
        _ = m.onHeard(Self.fake(0), incarnation: 1, from: Self.target(0), now: Self.t0 + .milliseconds(10))
        _ = m.onHeard(Self.fake(1), incarnation: 1, from: Self.target(1), now: Self.t0 + .milliseconds(10))
        #expect(m.isReachable(Self.fake(0)) && m.isReachable(Self.fake(1)))
        #expect(m.peers[Self.fake(0)]?.vetted == true, "DNS-SD showed it: its clock reports count")
        #expect(m.peers[Self.fake(0)]?.paths.first { $0.endpoint == Self.target(0) }?.source == .mdns)
        #expect(m.peers[Self.fake(1)]?.vetted == false, "its instance was withdrawn: only its own word remains")
        // Withdrawn now, it is no longer vouched for.
        _ = m.onWithdrawal(.init(instance: "x0", interfaceIndex: 2), now: Self.t0 + .milliseconds(20))
        #expect(m.peers[Self.fake(0)]?.vetted == false)
    }

    @Test("sightings of strangers that gave way are remembered at most maxRemembered, the oldest going first")
    func rememberedSightingsBounded() {
        var m = Self.flooded(count: 40) { $0.strangers.maxUnheard = 4; $0.strangers.maxRemembered = 8 }
        #expect(m.peers.count == 4)
        // Strangers 0…35 gave way; only 28…35 are remembered.
        _ = m.onHeard(Self.fake(27), incarnation: 1, from: Self.target(27), now: Self.t0 + .milliseconds(10))
        _ = m.onHeard(Self.fake(28), incarnation: 1, from: Self.target(28), now: Self.t0 + .milliseconds(10))
        #expect(m.peers[Self.fake(27)]?.vetted == false)
        #expect(m.peers[Self.fake(28)]?.vetted == true)
    }

    @Test("a stranger's addresses are probed at the usual pace for 10 s, every 5 s after, and not after a minute")
    func probesBackOff() {
        var m = Self.flooded(count: 1, paths: 8)
        var counts = (quick: 0, slow: 0, late: 0)
        var now = Self.t0
        while now < Self.t0 + .seconds(120) {
            let n = m.dueProbes(now: now).count
            switch now - Self.t0 {
            case ..<TimeSpan.seconds(10): counts.quick += n
            case ..<TimeSpan.seconds(60): counts.slow += n
            default: counts.late += n
            }
            now += .milliseconds(100)
        }
        #expect(counts.quick == 8 * 20)  // every 500 ms
        #expect(counts.slow == 8 * 10)  // every 5 s
        #expect(counts.late == 0)
    }
}
