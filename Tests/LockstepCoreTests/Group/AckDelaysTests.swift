import Testing

@testable import LockstepCore

/// How long peers took to acknowledge: the worst of the latest, for a while.
@Suite("Ack delays")
struct AckDelaysTests {
    static let bob = PeerID(high: 0, low: 2)
    static let carol = PeerID(high: 0, low: 3)
    static let t0 = LocalTime(ns: 10_000_000_000)

    @Test("a peer's worst delay is the longest of its latest 8, per peer")
    func worstOfTheLatest() {
        var d = AckDelays()
        d.record(.milliseconds(40), from: Self.bob, at: Self.t0)
        for k in 1...8 { d.record(.milliseconds(Int64(k)), from: Self.bob, at: Self.t0 + .seconds(Int64(k))) }
        #expect(d.worst(of: Self.bob, now: Self.t0 + .seconds(9)) == .milliseconds(8), "the 40 ms delay was the ninth latest")
        d.record(.milliseconds(3), from: Self.carol, at: Self.t0)
        #expect(d.worst(of: Self.carol, now: Self.t0 + .seconds(9)) == .milliseconds(3))
    }

    @Test("a delay counts for 10 minutes, then no longer lengthens commands")
    func memory() {
        var d = AckDelays()
        d.record(.milliseconds(60), from: Self.bob, at: Self.t0)
        d.record(.milliseconds(5), from: Self.bob, at: Self.t0 + .seconds(300))
        #expect(d.worst(of: Self.bob, now: Self.t0 + .seconds(600)) == .milliseconds(60))
        #expect(d.worst(of: Self.bob, now: Self.t0 + .seconds(601)) == .milliseconds(5))
        #expect(d.worst(of: Self.bob, now: Self.t0 + .seconds(901)) == nil)
    }

    @Test("an intake counts as the longest of the latest 8 for 10 minutes; a negative one or one over 1 s is not kept")
    func intakes() {
        var d = AckDelays()
        #expect(d.worstIntake(now: Self.t0) == nil)
        d.recordIntake(.milliseconds(70), at: Self.t0)
        for k in 1...8 { d.recordIntake(.milliseconds(Int64(k)), at: Self.t0 + .seconds(Int64(k))) }
        #expect(d.worstIntake(now: Self.t0 + .seconds(9)) == .milliseconds(8), "the 70 ms intake was the ninth latest")
        d.recordIntake(.milliseconds(-3), at: Self.t0 + .seconds(10))
        d.recordIntake(.milliseconds(1_001), at: Self.t0 + .seconds(10))
        #expect(d.worstIntake(now: Self.t0 + .seconds(10)) == .milliseconds(8), "neither was kept")
        d.recordIntake(.seconds(1), at: Self.t0 + .seconds(10))
        #expect(d.worstIntake(now: Self.t0 + .seconds(10)) == .seconds(1))
        #expect(d.worstIntake(now: Self.t0 + .seconds(611)) == nil)
        #expect(d.worst(of: Self.bob, now: Self.t0 + .seconds(10)) == nil, "intakes are nobody's acknowledgements")
    }

    @Test("forgetting a peer drops its delays and what it published")
    func forget() {
        var d = AckDelays()
        d.record(.milliseconds(9), from: Self.bob, at: Self.t0)
        d.recordPublished(.milliseconds(30), from: Self.bob, at: Self.t0)
        d.forget(Self.bob)
        #expect(d.worst(of: Self.bob, now: Self.t0) == nil)
        #expect(d.publishedIntake(of: Self.bob, now: Self.t0) == nil)
    }

    @Test("the delay expected for a peer: its acknowledgements once timed, else the longer of its published intake and this node's own, for 10 minutes; zero withdraws a publication")
    func expected() {
        var d = AckDelays()
        #expect(d.expected(for: Self.bob, now: Self.t0) == nil)
        d.recordIntake(.milliseconds(20), at: Self.t0)
        #expect(d.expected(for: Self.bob, now: Self.t0) == .milliseconds(20), "this node's own intake")
        d.recordPublished(.milliseconds(45), from: Self.bob, at: Self.t0)
        #expect(d.expected(for: Self.bob, now: Self.t0) == .milliseconds(45), "bob's is longer")
        #expect(d.expected(for: Self.carol, now: Self.t0) == .milliseconds(20), "carol published nothing")
        d.recordPublished(.milliseconds(5), from: Self.carol, at: Self.t0)
        #expect(d.expected(for: Self.carol, now: Self.t0) == .milliseconds(20), "carol's is shorter than this node's own")
        #expect(d.expected(for: Self.bob, now: Self.t0 + .seconds(601)) == nil, "both are 10 minutes old")
        d.record(.milliseconds(3), from: Self.bob, at: Self.t0)
        #expect(d.expected(for: Self.bob, now: Self.t0) == .milliseconds(3), "bob's own acknowledgements, once timed")
        d.recordPublished(.zero, from: Self.carol, at: Self.t0 + .seconds(1))
        #expect(d.publishedIntake(of: Self.carol, now: Self.t0 + .seconds(1)) == nil, "withdrawn")
    }
}
