import Testing

@testable import LockstepCore

/// When a node tells its peers how long operations take to reach it.
@Suite("Intake publication")
struct IntakePublicationTests {
    static let t0 = LocalTime(ns: 10_000_000_000)

    @Test("a new intake is published with a quarter of headroom, rounded up to a millisecond, once it has settled")
    func publishesWithHeadroomAfterSettling() {
        var p = IntakePublication()
        p.onIntake(now: Self.t0)
        #expect(p.checkAt == Self.t0 + IntakePublication.settle)
        #expect(p.onCheck(worst: .milliseconds(40), now: Self.t0 + .milliseconds(100)) == nil, "the burst is still going")
        #expect(p.onCheck(worst: .microseconds(40_001), now: Self.t0 + .milliseconds(500)) == .milliseconds(51))
        #expect(p.published == .milliseconds(51))
        #expect(p.checkAt == nil)
    }

    @Test("published again only when the intake exceeds the publication or falls below a quarter of it, at most once a second; none withdraws it")
    func hysteresisAndInterval() {
        var p = IntakePublication()
        let t1 = Self.t0 + .seconds(10)
        #expect(p.onCheck(worst: nil, now: Self.t0) == nil, "nothing to withdraw")
        #expect(p.onCheck(worst: .milliseconds(40), now: Self.t0) == .milliseconds(50))
        #expect(p.onCheck(worst: .milliseconds(60), now: Self.t0 + .milliseconds(999)) == nil, "a second has not passed")
        #expect(p.onCheck(worst: .milliseconds(50), now: t1) == nil, "within the headroom")
        #expect(p.onCheck(worst: .milliseconds(13), now: t1) == nil, "not below a quarter")
        #expect(p.onCheck(worst: .milliseconds(60), now: t1) == .milliseconds(75))
        #expect(p.onCheck(worst: .milliseconds(18), now: t1 + .seconds(1)) == .milliseconds(23))
        #expect(p.onCheck(worst: nil, now: t1 + .seconds(2)) == .zero, "the intakes aged out")
        #expect(p.onCheck(worst: nil, now: t1 + .seconds(3)) == nil)
    }

    @Test("an intake that falls below a quarter but rounds to the value told is not told again: sub-millisecond intakes are told once")
    func unchangedValueNotRetold() {
        var p = IntakePublication()
        #expect(p.onCheck(worst: .microseconds(150), now: Self.t0) == .milliseconds(1))
        for k in 1...20 {
            #expect(p.onCheck(worst: .microseconds(100 + Int64(k)), now: Self.t0 + .seconds(Int64(2 * k))) == nil, "still rounds to 1 ms")
        }
        #expect(p.onCheck(worst: .microseconds(1_100), now: Self.t0 + .seconds(60)) == .milliseconds(2), "past what was told: told")
        #expect(p.onCheck(worst: .microseconds(300), now: Self.t0 + .seconds(62)) == .milliseconds(1), "below a quarter, and a new value: told")
        #expect(p.onCheck(worst: .microseconds(200), now: Self.t0 + .seconds(400)) == .milliseconds(1), "standing 5 minutes: told again")
    }

    @Test("a standing value is told again every 5 minutes, before receivers forget it; nothing standing is not")
    func refresh() {
        var p = IntakePublication()
        #expect(p.onCheck(worst: .milliseconds(8), now: Self.t0) == .milliseconds(10))
        #expect(p.onCheck(worst: .milliseconds(8), now: Self.t0 + .seconds(299)) == nil)
        #expect(p.onCheck(worst: .milliseconds(8), now: Self.t0 + .seconds(300)) == .milliseconds(10))
        #expect(p.onCheck(worst: nil, now: Self.t0 + .seconds(301)) == .zero)
        #expect(p.onCheck(worst: nil, now: Self.t0 + .seconds(900)) == nil, "a withdrawal is not repeated")
    }

    @Test("each device waits its own stagger after settling, below 2 s, so that devices do not publish together")
    func stagger() {
        var p = IntakePublication(stagger: .milliseconds(300))
        p.onIntake(now: Self.t0)
        #expect(p.checkAt == Self.t0 + IntakePublication.settle + .milliseconds(300))
        #expect(p.onCheck(worst: .milliseconds(8), now: Self.t0 + .milliseconds(799)) == nil)
        #expect(p.onCheck(worst: .milliseconds(8), now: Self.t0 + .milliseconds(800)) == .milliseconds(10))
        #expect(IntakePublication(stagger: .seconds(5)).stagger == .seconds(1), "cut below 2 s")
        var g = SplitMix64(seed: 7)
        let staggers = (0..<64).map { _ in IntakePublication.stagger(for: PeerID(high: g.next(), low: g.next())) }
        #expect(staggers.allSatisfy { $0 >= .zero && $0 < IntakePublication.maxStagger })
        #expect(Set(staggers).count > 50, "64 devices spread over 2,000 ms steps")
    }

    @Test("a value past the wire's range is published at its end")
    func clampedToTheWire() {
        #expect(IntakePublication.withHeadroom(.seconds(1)) == .milliseconds(1_250))
        #expect(IntakePublication.withHeadroom(.seconds(5)) == .nanoseconds(Limits.intakeNs.upperBound))
    }
}
