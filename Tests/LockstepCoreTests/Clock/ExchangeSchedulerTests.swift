import LockstepCore
import Testing

@Suite("Exchange scheduler")
struct ExchangeSchedulerTests {
    let start = LocalTime(ns: 1_000 * Nanos.second)

    func ms(_ n: Int64) -> TimeSpan { .milliseconds(n) }

    func scheduler(_ configuration: ExchangeScheduler.Configuration = .init()) -> ExchangeScheduler {
        ExchangeScheduler(configuration: configuration, appeared: start)
    }

    func estimate(bound: Double, at t: LocalTime) -> ClockEstimate {
        ClockEstimate(reference: t, offsetNs: 0, errorBoundNs: bound, hardBoundNs: 50_000, delay: .microseconds(40), sampleCount: 100)
    }

    /// Sends `id` at `t`, stamped with `t` as its `t1`.
    func send(_ s: inout ExchangeScheduler, _ id: UInt64, at t: LocalTime) {
        s.onSent(exchangeID: id, at: t)
        s.onStamped(exchangeID: id, t1: t)
    }

    @Test("a new peer is probed at once, then every 25 ms during the burst")
    func burst() {
        var s = scheduler()
        #expect(s.shouldSend(at: start, estimate: nil))
        send(&s, 1, at: start)
        #expect(s.nextSendTime(at: start, estimate: nil) == start + ms(25))
        #expect(!s.shouldSend(at: start + ms(24), estimate: nil))
        #expect(s.isBursting(at: start + ms(1_499)))
        #expect(!s.isBursting(at: start + ms(1_500)))
    }

    @Test("a lengthened slowest interval slows a tight estimate down, a wide bound still speeds it up, and it never goes below the configured one")
    func sharedSlowest() {
        var s = scheduler()
        let t = start + .seconds(10)
        s.setSlowest(ms(1_000))
        #expect(s.interval(at: t, estimate: estimate(bound: 2_000, at: t)) == ms(1_000))
        #expect(s.interval(at: t, estimate: estimate(bound: 500_000, at: t)) == ms(100))
        #expect(s.interval(at: t, estimate: estimate(bound: 10_000, at: t)) == ms(500))
        s.setSlowest(ms(50))
        #expect(s.slowest == ms(200))
        #expect(s.interval(at: t, estimate: estimate(bound: 2_000, at: t)) == ms(200))
        #expect(s.interval(at: start, estimate: estimate(bound: 2_000, at: start)) == ms(25), "the burst is not slowed")
    }

    @Test("after the burst the rate follows the bound: 10/s when wide, 5/s when tight")
    func adaptiveRate() {
        let s = scheduler()
        let t = start + .seconds(10)
        #expect(s.interval(at: t, estimate: estimate(bound: 500_000, at: t)) == ms(100))
        #expect(s.interval(at: t, estimate: estimate(bound: 2_000, at: t)) == ms(200))
        #expect(s.interval(at: t, estimate: estimate(bound: 8_000, at: t)) == ms(125))
        #expect(s.interval(at: t, estimate: nil) == ms(25))
    }

    @Test("replies are matched to their request by id and echoed t1; strays and late replies are unknown")
    func matching() {
        var s = scheduler()
        send(&s, 7, at: start)
        #expect(s.onReply(exchangeID: 8, echoedT1: start.ns) == .unknown)
        #expect(s.onReply(exchangeID: 7, echoedT1: start.ns) == .matched(t1: start))
        #expect(s.onReply(exchangeID: 7, echoedT1: start.ns) == .unknown)
        #expect(s.outstandingCount == 0)
    }

    @Test("a reply echoing another t1 than its request carried is refused, and the request still waits for its own")
    func originCheck() {
        var s = scheduler()
        send(&s, 7, at: start)
        // Replayed from an earlier exchange 7, or forged: another t1.
        #expect(s.onReply(exchangeID: 7, echoedT1: start.ns - 1_000_000) == .wrongEcho)
        #expect(s.outstandingCount == 1)
        #expect(s.onReply(exchangeID: 7, echoedT1: start.ns) == .matched(t1: start))
    }

    @Test("a request whose send time was never reported matches no reply")
    func unstamped() {
        var s = scheduler()
        s.onSent(exchangeID: 3, at: start)
        #expect(s.onReply(exchangeID: 3, echoedT1: start.ns) == .wrongEcho)
    }

    @Test("a request without a reply is lost after the timeout, does not block the next, and speeds the rate up")
    func loss() {
        var s = scheduler()
        send(&s, 1, at: start)
        #expect(s.nextExpiry == start + .seconds(1))
        send(&s, 2, at: start + ms(25))
        #expect(s.expire(at: start + ms(999)) == [])
        #expect(s.expire(at: start + ms(1_030)) == [1, 2])
        #expect(s.outstandingCount == 0)
        #expect(s.onReply(exchangeID: 1, echoedT1: start.ns) == .unknown)
        #expect(s.recentLossRate == 1)
        let t = start + .seconds(10)
        #expect(s.interval(at: t, estimate: estimate(bound: 2_000, at: t)) == ms(100))
        #expect(s.nextWakeup(at: t, estimate: nil) == start + ms(25) + ms(25))
    }

    @Test("outstanding requests are bounded: the oldest is forgotten and counted lost")
    func boundedOutstanding() {
        var s = scheduler(.init(maxOutstanding: 4))
        for id: UInt64 in 1...10 { send(&s, id, at: start + ms(Int64(id))) }
        #expect(s.outstandingCount == 4)
        #expect(s.onReply(exchangeID: 6, echoedT1: (start + ms(6)).ns) == .unknown)
        #expect(s.onReply(exchangeID: 7, echoedT1: (start + ms(7)).ns) == .matched(t1: start + ms(7)))
        #expect(s.recentLossRate > 0.8)
    }

    @Test("an outlier asks for a quick second look; a clock step restarts the burst")
    func verdicts() {
        var s = scheduler()
        let t = start + .seconds(10)
        let tight = estimate(bound: 2_000, at: t)
        send(&s, 1, at: t)
        #expect(s.nextSendTime(at: t, estimate: tight) == t + ms(200))
        s.onVerdict(.rejectedOutlier(residualNs: 5e6), at: t + ms(1))
        #expect(s.nextSendTime(at: t + ms(1), estimate: tight) == t + ms(26))
        send(&s, 2, at: t + ms(26))
        #expect(s.nextSendTime(at: t + ms(26), estimate: tight) == t + ms(226))
        s.onVerdict(.clockStepped(byNs: 5e6), at: t + ms(30))
        #expect(s.isBursting(at: t + ms(30)))
        #expect(s.shouldSend(at: t + ms(30), estimate: tight))
    }
}
