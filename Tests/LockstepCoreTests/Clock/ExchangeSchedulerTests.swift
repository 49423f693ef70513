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

    func estimate(bound: Double, growthPPM: Double, at t: LocalTime) -> ClockEstimate {
        ClockEstimate(reference: t, offsetNs: 0, errorBoundNs: bound, errorGrowthPPM: growthPPM, hardBoundNs: 50_000, delay: .microseconds(40), sampleCount: 100)
    }

    /// `n` samples taken at `every` from `t` on; returns when the last was taken.
    func take(_ n: Int, _ s: inout ExchangeScheduler, from t: LocalTime, every: TimeSpan) -> LocalTime {
        var now = t
        for _ in 0..<n {
            now = now + every
            s.onVerdict(.accepted, at: now)
        }
        return now
    }

    @Test("steady after the burst: 100 ms at first, doubling after every 4 samples taken, up to the 1 s keep-alive")
    func slowsWhenSteady() {
        var s = scheduler()
        var t = start + .seconds(2)
        let tight = { (t: LocalTime) in self.estimate(bound: 1_000, growthPPM: 0.1, at: t) }
        #expect(s.interval(at: t, estimate: tight(t)) == ms(100))
        var seen: [TimeSpan] = []
        for _ in 0..<6 {
            t = take(4, &s, from: t, every: s.interval(at: t, estimate: tight(t)))
            seen.append(s.interval(at: t, estimate: tight(t)))
        }
        #expect(seen == [ms(200), ms(400), ms(800), ms(1_000), ms(1_000), ms(1_000)])
        // Samples taken during the burst do not count.
        var b = scheduler()
        _ = take(40, &b, from: start, every: ms(25))
        #expect(b.level == 0)
    }

    @Test("the steady interval is as long as the bound's growth allows: it may grow by half the 5 µs target within one interval")
    func derivedFromGrowth() {
        var s = scheduler()
        let t = take(40, &s, from: start + .seconds(2), every: ms(100))
        #expect(s.interval(at: t, estimate: estimate(bound: 1_000, growthPPM: 0.1, at: t)) == ms(1_000), "0.1 µs/s: 25 s, capped")
        #expect(s.interval(at: t, estimate: estimate(bound: 1_000, growthPPM: 5, at: t)) == ms(500), "5 µs/s: 2.5 µs in 500 ms")
        #expect(s.interval(at: t, estimate: estimate(bound: 1_000, growthPPM: 100, at: t)) == ms(100), "never below the fastest steady rate")
    }

    @Test("a bound wider than the target speeds the rate up by their ratio")
    func wideBoundSpeedsUp() {
        var s = scheduler()
        let t = take(40, &s, from: start + .seconds(2), every: ms(100))
        #expect(s.interval(at: t, estimate: estimate(bound: 10_000, growthPPM: 0, at: t)) == ms(500))
        #expect(s.interval(at: t, estimate: estimate(bound: 500_000, growthPPM: 0, at: t)) == ms(100))
        #expect(s.interval(at: t, estimate: nil) == ms(25))
    }

    @Test("fast again when an estimate goes wrong: an outlier starts the doubling over, a clock step or a restart starts a burst")
    func speedsUpAfterTrouble() {
        var s = scheduler()
        var t = take(40, &s, from: start + .seconds(2), every: ms(100))
        let tight = estimate(bound: 1_000, growthPPM: 0.1, at: t)
        #expect(s.interval(at: t, estimate: tight) == ms(1_000))
        s.onVerdict(.rejectedOutlier(residualNs: 5e6), at: t)
        #expect(s.interval(at: t, estimate: tight) == ms(100))
        t = take(40, &s, from: t, every: ms(100))
        #expect(s.interval(at: t, estimate: tight) == ms(1_000))
        s.onVerdict(.clockStepped(byNs: 5e6), at: t)
        #expect(s.interval(at: t, estimate: tight) == ms(25))
        #expect(s.interval(at: t + ms(1_500), estimate: tight) == ms(100))
        t = take(40, &s, from: t + ms(1_500), every: ms(100))
        #expect(s.interval(at: t, estimate: tight) == ms(1_000))
        s.restartBurst(at: t)
        #expect(s.interval(at: t, estimate: tight) == ms(25))
        #expect(s.interval(at: t + ms(1_500), estimate: tight) == ms(100))
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
        #expect(s.nextSendTime(at: t, estimate: tight) == t + ms(100))
        s.onVerdict(.rejectedOutlier(residualNs: 5e6), at: t + ms(1))
        #expect(s.nextSendTime(at: t + ms(1), estimate: tight) == t + ms(26))
        send(&s, 2, at: t + ms(26))
        #expect(s.nextSendTime(at: t + ms(26), estimate: tight) == t + ms(126))
        s.onVerdict(.clockStepped(byNs: 5e6), at: t + ms(30))
        #expect(s.isBursting(at: t + ms(30)))
        #expect(s.shouldSend(at: t + ms(30), estimate: tight))
    }

    /// Steady at one exchange a second (no burst), last request sent at `start`.
    func steadyEverySecond(joinShare: Double = 0.35) -> ExchangeScheduler {
        var s = scheduler(.init(burstDuration: .zero, minInterval: .seconds(1), maxInterval: .seconds(1), joinShare: joinShare))
        send(&s, 1, at: start)
        return s
    }

    @Test("a request may join another peer's batch up to joinShare of its interval early, not sooner, and is due at its interval")
    func joinsBatchWithinShare() {
        let s = steadyEverySecond()
        let tight = { (t: LocalTime) in self.estimate(bound: 1_000, growthPPM: 0.1, at: t) }
        #expect(!s.mayJoin(at: start + ms(649), estimate: tight(start + ms(649))))
        #expect(s.mayJoin(at: start + ms(650), estimate: tight(start + ms(650))))
        #expect(!s.shouldSend(at: start + ms(650), estimate: tight(start + ms(650))))
        #expect(s.nextSendTime(at: start + ms(650), estimate: tight(start + ms(650))) == start + .seconds(1))
        let never = steadyEverySecond(joinShare: 0)
        #expect(!never.mayJoin(at: start + ms(999), estimate: tight(start + ms(999))))
        #expect(never.mayJoin(at: start + .seconds(1), estimate: tight(start + .seconds(1))))
    }

    @Test("a request never joins a batch ahead of the peer's exchange it is held back for (the other end polls for both)")
    func joiningKeepsPeerHoldBack() {
        var s = steadyEverySecond()
        let tight = { (t: LocalTime) in self.estimate(bound: 1_000, growthPPM: 0.1, at: t) }
        _ = s.onReply(exchangeID: 1, echoedT1: start.ns)
        // The peer ran an exchange with us 900 ms after our request: ours waits 1.25 s from it.
        s.onPeerExchange(at: start + ms(900))
        let held = start + ms(900) + ms(1_250)
        #expect(!s.mayJoin(at: held - ms(1), estimate: tight(held - ms(1))))
        #expect(s.mayJoin(at: held, estimate: tight(held)))
        #expect(s.nextSendTime(at: held, estimate: tight(held)) == held)
    }

    /// Two ends of one pair, steady at one exchange a second, that both polled at `start`: each
    /// exchange is heard by the other end (its result) 200 µs after it went out. Returns how many
    /// requests each end sent in the next 20 s.
    func pairPolling(yields: (Bool, Bool)) -> (Int, Int) {
        let configuration = ExchangeScheduler.Configuration(burstDuration: .zero, minInterval: .seconds(1), maxInterval: .seconds(1), joinShare: 0)
        var ends = [
            ExchangeScheduler(configuration: configuration, appeared: start, yieldsToPeer: yields.0),
            ExchangeScheduler(configuration: configuration, appeared: start, yieldsToPeer: yields.1),
        ]
        var sent = [0, 0], id: UInt64 = 0
        var heard: [(end: Int, at: LocalTime)] = []
        let tight = { (t: LocalTime) in self.estimate(bound: 1_000, growthPPM: 0.1, at: t) }
        var t = start
        while t < start + .seconds(20) {
            for h in heard where h.at <= t { ends[h.end].onPeerExchange(at: h.at) }
            heard.removeAll { $0.at <= t }
            for i in 0..<2 where ends[i].shouldSend(at: t, estimate: tight(t)) {
                id += 1
                send(&ends[i], id, at: t)
                _ = ends[i].onReply(exchangeID: id, echoedT1: t.ns)
                heard.append((1 - i, t + .microseconds(200)))
                if t > start { sent[i] += 1 }
            }
            t = t + .microseconds(100)
        }
        return (sent[0], sent[1])
    }

    @Test("two ends that polled at the same instant settle on one polling for both: the one that yields is held back past the other's next exchange")
    func pairSettlesOnOnePoller() {
        let settled = pairPolling(yields: (false, true))
        #expect(settled.0 >= 19 && settled.1 <= 1, "requests in 20 s: \(settled)")
        // Without an end that yields, both poll together again and again.
        let lockstep = pairPolling(yields: (false, false))
        #expect(lockstep.0 >= 10 && lockstep.1 >= 10, "requests in 20 s: \(lockstep)")
    }
}
