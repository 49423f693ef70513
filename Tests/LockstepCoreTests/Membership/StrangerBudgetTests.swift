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
