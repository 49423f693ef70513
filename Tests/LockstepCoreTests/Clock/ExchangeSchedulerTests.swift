import LockstepCore
import Testing

@Suite("Exchange scheduler")
struct ExchangeSchedulerTests {
    static let ms = Nanos.millisecond
    let start: Int64 = 1_000 * Nanos.second

    func scheduler(_ configuration: ExchangeScheduler.Configuration = .init()) -> ExchangeScheduler {
        ExchangeScheduler(configuration: configuration, appearedAtLocal: start)
    }

    func estimate(bound: Double, at t: Int64) -> ClockEstimate {
        ClockEstimate(referenceLocal: t, offsetNs: 0, errorBoundNs: bound, hardBoundNs: 50_000, delayNs: 40_000, sampleCount: 100)
    }

    @Test("a new peer is probed at once, then every 25 ms during the burst")
    func burst() {
        var s = scheduler()
        #expect(s.shouldSend(atLocal: start, estimate: nil))
        s.onSent(exchangeID: 1, atLocal: start)
        #expect(s.nextSendTime(atLocal: start, estimate: nil) == start + 25 * Self.ms)
        #expect(!s.shouldSend(atLocal: start + 24 * Self.ms, estimate: nil))
        #expect(s.isBursting(atLocal: start + 1_499 * Self.ms))
        #expect(!s.isBursting(atLocal: start + 1_500 * Self.ms))
    }

    @Test("after the burst the rate follows the bound: 10/s when wide, 4/s when tight")
    func adaptiveRate() {
        let s = scheduler()
        let t = start + 10 * Nanos.second
        #expect(s.interval(atLocal: t, estimate: estimate(bound: 500_000, at: t)) == 100 * Self.ms)
        #expect(s.interval(atLocal: t, estimate: estimate(bound: 2_000, at: t)) == 250 * Self.ms)
        #expect(s.interval(atLocal: t, estimate: estimate(bound: 10_000, at: t)) == 125 * Self.ms)
        #expect(s.interval(atLocal: t, estimate: nil) == 25 * Self.ms)
    }

    @Test("replies are matched to their request; strays and late replies are unknown")
    func matching() {
        var s = scheduler()
        s.onSent(exchangeID: 7, atLocal: start)
        #expect(s.onReply(exchangeID: 8, atLocal: start + Self.ms) == .unknown)
        #expect(s.onReply(exchangeID: 7, atLocal: start + Self.ms) == .matched(sentAtLocal: start))
        #expect(s.onReply(exchangeID: 7, atLocal: start + 2 * Self.ms) == .unknown)
        #expect(s.outstandingCount == 0)
    }

    @Test("a request without a reply is lost after the timeout, does not block the next, and speeds the rate up")
    func loss() {
        var s = scheduler()
        s.onSent(exchangeID: 1, atLocal: start)
        #expect(s.nextExpiry == start + Nanos.second)
        s.onSent(exchangeID: 2, atLocal: start + 25 * Self.ms)
        #expect(s.expire(atLocal: start + 999 * Self.ms) == [])
        #expect(s.expire(atLocal: start + 1_030 * Self.ms) == [1, 2])
        #expect(s.outstandingCount == 0)
        #expect(s.onReply(exchangeID: 1, atLocal: start + 1_100 * Self.ms) == .unknown)
        #expect(s.recentLossRate == 1)
        let t = start + 10 * Nanos.second
        #expect(s.interval(atLocal: t, estimate: estimate(bound: 2_000, at: t)) == 100 * Self.ms)
        #expect(s.nextWakeup(atLocal: t, estimate: nil) == start + 25 * Self.ms + 25 * Self.ms)
    }

    @Test("outstanding requests are bounded: the oldest is forgotten and counted lost")
    func boundedOutstanding() {
        var s = scheduler(.init(maxOutstanding: 4))
        for id: UInt64 in 1...10 { s.onSent(exchangeID: id, atLocal: start + Int64(id) * Self.ms) }
        #expect(s.outstandingCount == 4)
        #expect(s.onReply(exchangeID: 6, atLocal: start + 20 * Self.ms) == .unknown)
        #expect(s.onReply(exchangeID: 7, atLocal: start + 20 * Self.ms) == .matched(sentAtLocal: start + 7 * Self.ms))
        #expect(s.recentLossRate > 0.8)
    }

    @Test("an outlier asks for a quick second look; a clock step restarts the burst")
    func verdicts() {
        var s = scheduler()
        let t = start + 10 * Nanos.second
        let tight = estimate(bound: 2_000, at: t)
        s.onSent(exchangeID: 1, atLocal: t)
        #expect(s.nextSendTime(atLocal: t, estimate: tight) == t + 250 * Self.ms)
        s.onVerdict(.rejectedOutlier(residualNs: 5e6), atLocal: t + Self.ms)
        #expect(s.nextSendTime(atLocal: t + Self.ms, estimate: tight) == t + 26 * Self.ms)
        s.onSent(exchangeID: 2, atLocal: t + 26 * Self.ms)
        #expect(s.nextSendTime(atLocal: t + 26 * Self.ms, estimate: tight) == t + 276 * Self.ms)
        s.onVerdict(.clockStepped(byNs: 5e6), atLocal: t + 30 * Self.ms)
        #expect(s.isBursting(atLocal: t + 30 * Self.ms))
        #expect(s.shouldSend(atLocal: t + 30 * Self.ms, estimate: tight))
    }
}
