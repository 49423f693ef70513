/// Decides when to send the next clock exchange to one peer, and which exchanges are lost.
///
/// One instance per peer, a value type; time is an argument. Its owner asks
/// ``nextWakeup(at:estimate:)``, calls ``expire(at:)`` then to learn which requests are lost, and
/// sends a request when ``shouldSend(at:estimate:)`` says so, telling the scheduler with
/// ``onSent(exchangeID:at:)`` and then the exact send time the request carried
/// (``onStamped(exchangeID:t1:)``). Replies go through ``onReply(exchangeID:echoedT1:at:)``, which
/// matches them to their request by exchange id *and* echoed `t1` (RFC 5905's origin check), so a
/// stray, duplicated, replayed or forged reply is not mistaken for a sample.
///
/// Rate, as chrony adapts its polling interval to how well it knows a source:
/// - **Burst** for ``Configuration/burstDuration`` after a peer appears (or restarts, or its clock
///   steps): one exchange every ``Configuration/burstInterval``, so that an estimate is usable
///   after a few round trips and the skew is known within a second or two.
/// - **Steady** afterwards: the interval starts at ``Configuration/minInterval`` and doubles
///   after every ``Configuration/samplesPerDoubling`` samples in a row that the estimator took
///   (an outlier starts over), up to the slowest the estimate allows: the bound may grow by at
///   most ``Configuration/growthShare`` of ``Configuration/targetBoundNs`` within one interval
///   (its growth rate is the skew's uncertainty and the clock's wander), and never past
///   ``Configuration/maxInterval`` (a keep-alive: replies are how a peer is heard). A bound wider than the target half an interval ahead
///   shortens the interval by their ratio, and recent losses by `1 + lossFactor × loss rate`.
/// - **Speed-up** when an estimate goes wrong: an outlier (a possible clock step) asks for a
///   second look at once (``onVerdict(_:at:)``) and starts the doubling over, and so does a run
///   of slow samples (a path that may have changed: ``onSlowRun(_:)``); a confirmed step or a
///   restart starts a new burst.
///
/// Loss: a request with no reply after ``Configuration/exchangeTimeout`` is lost. Requests never
/// wait for each other, and at most ``Configuration/maxOutstanding`` are remembered (sending one
/// more forgets the oldest, which counts as lost). A reply to a forgotten request is `.unknown`.
///
/// Compared with NTP's poll process (RFC 5905 §13), the steady rate is far faster (a second, not
/// minutes: microseconds need many samples, and replies keep peers alive) and adapts to the
/// estimate's bound and its growth rather than to a clock discipline's time constant; chrony's
/// `iburst` is the model for the burst.
public struct ExchangeScheduler: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// Interval during the burst.
        public var burstInterval: TimeSpan
        /// Length of the burst after a peer appears.
        public var burstDuration: TimeSpan
        /// Shortest steady interval (fastest rate), where the steady rate starts.
        public var minInterval: TimeSpan
        /// Longest steady interval (slowest rate): a peer is heard through its replies, so this
        /// must stay well within `Membership`'s `lostAfter` (a keep-alive).
        public var maxInterval: TimeSpan
        /// The bound the link must keep: wider, the rate speeds up by their ratio.
        public var targetBoundNs: Double
        /// How much of ``targetBoundNs`` the bound may grow by between two samples: the steady
        /// interval is at most this over the bound's growth rate.
        public var growthShare: Double
        /// Samples the estimator takes in a row before the steady interval doubles.
        public var samplesPerDoubling: Int
        /// This many slow samples in a row (the estimator's run towards a delay step) bring the
        /// fastest steady rate back until the run ends: a path that may be changing is watched
        /// closely, and a step is told within seconds, not half a minute.
        public var slowSamplesToSpeedUp: Int
        /// How much recent losses speed the rate up: the interval is divided by `1 + lossFactor × lossRate`.
        public var lossFactor: Double
        /// How early, as a share of its interval, a request may go out with another peer's that is
        /// due (``mayJoin(at:estimate:)``): a node's requests to its peers then settle into one or
        /// two batches an interval, and it wakes once for each rather than once per peer. The
        /// price: links on shorter intervals pull the others along early. In simulated groups of
        /// 8–32, 0.35 halved the timer wake-ups for about 12 % more clock datagrams than no
        /// batches; 0.5 cost 16 % (docs/scale.md, ninth step).
        public var joinShare: Double
        /// A request with no reply after this long is lost.
        public var exchangeTimeout: TimeSpan
        /// Most requests awaiting a reply.
        public var maxOutstanding: Int

        public init(
            burstInterval: TimeSpan = .milliseconds(25),
            burstDuration: TimeSpan = .milliseconds(1_500),
            minInterval: TimeSpan = .milliseconds(100),
            maxInterval: TimeSpan = .seconds(1),
            targetBoundNs: Double = 5_000,
            growthShare: Double = 0.5,
            samplesPerDoubling: Int = 4,
            slowSamplesToSpeedUp: Int = 5,
            lossFactor: Double = 4,
            joinShare: Double = 0.35,
            exchangeTimeout: TimeSpan = .seconds(1),
            maxOutstanding: Int = 16
        ) {
            precondition(minInterval > .zero && minInterval <= maxInterval && maxOutstanding >= 1 && samplesPerDoubling >= 1 && slowSamplesToSpeedUp >= 1 && growthShare > 0)
            precondition(joinShare >= 0 && joinShare < 1)
            self.burstInterval = burstInterval
            self.burstDuration = burstDuration
            self.minInterval = minInterval
            self.maxInterval = maxInterval
            self.targetBoundNs = targetBoundNs
            self.growthShare = growthShare
            self.samplesPerDoubling = samplesPerDoubling
            self.slowSamplesToSpeedUp = slowSamplesToSpeedUp
            self.lossFactor = lossFactor
            self.joinShare = joinShare
            self.exchangeTimeout = exchangeTimeout
            self.maxOutstanding = maxOutstanding
        }
    }

    /// The outcome of matching a reply.
    public enum ReplyMatch: Sendable, Equatable {
        /// The reply answers the request sent with `t1` (the time the request carried).
        case matched(t1: LocalTime)
        /// No such request is waiting: late (already counted lost), duplicated, or forged.
        case unknown
        /// A request with this exchange id is waiting, but the reply echoes another `t1`:
        /// replayed from an earlier exchange, or forged. Not a sample; the request stays.
        case wrongEcho
    }

    /// A request awaiting its reply.
    struct Outstanding: Sendable {
        var id: UInt64
        /// When the scheduler decided to send it.
        var sentAt: LocalTime
        /// The time the request carried, once the sender says (``onStamped(exchangeID:t1:)``).
        var t1: LocalTime?
    }

    public let configuration: Configuration
    /// How many times the steady interval has doubled from ``Configuration/minInterval``.
    public private(set) var level = 0
    /// Samples taken in a row since the last doubling.
    private var takenInARow = 0
    /// Requests awaiting a reply, oldest first.
    private var outstanding: ContiguousArray<Outstanding>
    private var burstUntil: LocalTime
    private var lastSent: LocalTime?
    /// When the peer last finished an exchange that measured this link too (its `clock_result`):
    /// the next request of ours waits ``peerExchangeMargin`` intervals from then, so that a pair
    /// whose both ends poll settles on one of them polling for both. (With one interval, a result
    /// that arrived a little later than the last one let the other end fire first, half the time.)
    private var lastPeerExchange: LocalTime?
    /// How many of our intervals a peer's exchange holds our next request back.
    static let peerExchangeMargin = 1.25
    /// The same on the end that yields (``yieldsToPeer``): both ends of a pair that polled at the
    /// same instant hear each other's result at the same time, and with one margin would poll
    /// together again and again (every 1.25 intervals, twice the exchanges, as simulations
    /// showed); with two, the one that yields is held back past the other's next exchange.
    static let yieldingMargin = 1.5
    /// Whether this end yields to the peer when both poll (``PeerClocks`` picks one end of each
    /// pair by the two ids; the peer must not yield too).
    public let yieldsToPeer: Bool
    /// Doublings past which the interval cannot grow anyway (2¹⁶ × 1 ms is over a minute).
    static let maxLevel = 16
    /// A send wanted sooner than the rate says (after an outlier).
    private var probeAt: LocalTime?
    /// The last 32 outcomes, newest in bit 0: 1 = lost.
    private var lossHistory: UInt32 = 0
    private var outcomes = 0

    /// A scheduler for a peer that appeared at local time `appeared`: starts with a burst.
    /// `yieldsToPeer` on one end of each pair, so that the pair settles on one end polling for both.
    public init(configuration: Configuration = .init(), appeared: LocalTime, yieldsToPeer: Bool = false) {
        self.configuration = configuration
        self.yieldsToPeer = yieldsToPeer
        self.outstanding = []
        self.outstanding.reserveCapacity(configuration.maxOutstanding)
        self.burstUntil = appeared + configuration.burstDuration
    }

    /// Starts a new burst: the peer restarted or its clock stepped. Outstanding requests stay.
    public mutating func restartBurst(at now: LocalTime) {
        burstUntil = now + configuration.burstDuration
        lastSent = nil
        lastPeerExchange = nil
        startOver()
    }

    /// The steady interval starts again from ``Configuration/minInterval``.
    private mutating func startOver() {
        level = 0
        takenInARow = 0
    }

    /// Tells the scheduler what the estimator made of a reply. An outlier asks for a quick second
    /// look (so that a clock step is confirmed or dismissed within a few round trips, not
    /// seconds); a step restarts the burst.
    public mutating func onVerdict(_ verdict: ClockEstimator.SampleVerdict, at now: LocalTime) {
        switch verdict {
        case .rejectedOutlier:
            probeAt = now + configuration.burstInterval
            startOver()
        case .clockStepped:
            restartBurst(at: now)
        case .accepted:
            guard now >= burstUntil else { break }
            takenInARow += 1
            if takenInARow >= configuration.samplesPerDoubling, level < Self.maxLevel {
                level += 1
                takenInARow = 0
            }
        case .rejectedDelay, .rejectedInvalid:
            break
        }
    }

    /// The estimator's latest samples were `length` slow ones in a row
    /// (``ClockEstimator/slowRunLength``): from ``Configuration/slowSamplesToSpeedUp`` on, the
    /// steady interval starts over.
    public mutating func onSlowRun(_ length: Int) {
        if length >= configuration.slowSamplesToSpeedUp { startOver() }
    }

    /// The peer finished an exchange whose four timestamps this node has too (``PeerClocks``'s
    /// mirrored samples): it counts as one of ours for the rate.
    public mutating func onPeerExchange(at now: LocalTime) {
        lastPeerExchange = now
    }

    /// An exchange is due by `t` (another link showed an outlier: if our own clock stepped,
    /// every peer shows it, and the sooner the better), but not sooner than a burst interval
    /// after the last request.
    public mutating func lookSoon(by t: LocalTime) {
        probeAt = min(probeAt ?? t, t)
    }

    /// True while bursting.
    public func isBursting(at now: LocalTime) -> Bool { now < burstUntil }

    /// Requests awaiting a reply.
    public var outstandingCount: Int { outstanding.count }

    /// Fraction of the recent exchanges (up to 32) that were lost.
    public var recentLossRate: Double {
        let n = min(outcomes, 32)
        return n == 0 ? 0 : Double(lossHistory.nonzeroBitCount) / Double(n)
    }

    // MARK: - Events

    /// A request went out.
    public mutating func onSent(exchangeID: UInt64, at now: LocalTime) {
        if outstanding.count == configuration.maxOutstanding {
            outstanding.removeFirst()
            record(lost: true)
        }
        outstanding.append(Outstanding(id: exchangeID, sentAt: now, t1: nil))
        lastSent = now
        probeAt = nil
    }

    /// The request `exchangeID` left carrying `t1` (the sender stamps it as late as it can).
    public mutating func onStamped(exchangeID: UInt64, t1: LocalTime) {
        guard let index = outstanding.firstIndex(where: { $0.id == exchangeID }) else { return }
        outstanding[index].t1 = t1
    }

    /// A reply came in, echoing `echoedT1`; matches it to its request. A request whose send time
    /// was never reported (its sender failed to stamp it) matches no reply.
    public mutating func onReply(exchangeID: UInt64, echoedT1: Int64) -> ReplyMatch {
        guard let index = outstanding.firstIndex(where: { $0.id == exchangeID }) else { return .unknown }
        guard let t1 = outstanding[index].t1, t1.ns == echoedT1 else { return .wrongEcho }
        outstanding.remove(at: index)
        record(lost: false)
        return .matched(t1: t1)
    }

    /// Drops the requests that timed out by `now` and returns their ids (they are lost).
    public mutating func expire(at now: LocalTime) -> [UInt64] {
        var lost: [UInt64] = []
        while let first = outstanding.first, now - first.sentAt >= configuration.exchangeTimeout || first.sentAt > now {
            lost.append(first.id)
            outstanding.removeFirst()
            record(lost: true)
        }
        return lost
    }

    // MARK: - Timing

    /// The interval between requests given the current estimate: `minInterval × 2^level`, no
    /// longer than `maxInterval` nor than the time the bound takes to grow by `growthShare ×
    /// targetBound`; shortened by `bound half an interval ahead / targetBound` when that exceeds 1
    /// and by `1 + lossFactor × lossRate`; never below `minInterval`. The burst interval while
    /// bursting or without an estimate.
    public func interval(at now: LocalTime, estimate: ClockEstimate?) -> TimeSpan {
        if now < burstUntil { return configuration.burstInterval }
        guard let estimate else { return configuration.burstInterval }
        let growth = max(estimate.errorGrowthPPM, 0) * 1e-6
        let byGrowth = growth > 0 ? configuration.growthShare * configuration.targetBoundNs / growth : .infinity
        let byLevel = Double(configuration.minInterval.ns) * Double(1 << level)
        var interval = min(Double(configuration.maxInterval.ns), byGrowth, byLevel)
        let need = estimate.errorBound(at: now + TimeSpan(nanoseconds: interval / 2)) / configuration.targetBoundNs
        interval /= need.isFinite ? max(1, need) : .infinity
        interval /= 1 + configuration.lossFactor * recentLossRate
        return TimeSpan(nanoseconds: max(Double(configuration.minInterval.ns), interval))
    }

    /// When the next request should go out.
    public func nextSendTime(at now: LocalTime, estimate: ClockEstimate?) -> LocalTime {
        sendWindow(at: now, estimate: estimate).due
    }

    /// True when a request should go out now.
    public func shouldSend(at now: LocalTime, estimate: ClockEstimate?) -> Bool {
        now >= nextSendTime(at: now, estimate: estimate)
    }

    /// True when a request may go out now with another peer's that is due
    /// (``Configuration/joinShare``): it is no more than that share of its interval early. Never
    /// ahead of a peer's exchange held back for (the pair's other end polls for both).
    public func mayJoin(at now: LocalTime, estimate: ClockEstimate?) -> Bool {
        now >= sendWindow(at: now, estimate: estimate).earliest
    }

    /// The earliest a request may join a batch (``mayJoin(at:estimate:)``), and when it is due
    /// (``nextSendTime(at:estimate:)``), from one computation of the interval.
    public func sendWindow(at now: LocalTime, estimate: ClockEstimate?) -> (earliest: LocalTime, due: LocalTime) {
        // A last send in the future: our clock went back behind our back. Measure now, so that
        // the step shows (``OwnClockStepDetector``) rather than silence until time catches up.
        guard let lastSent, lastSent <= now else { return (now, now) }
        let interval = interval(at: now, estimate: estimate)
        var due = lastSent + interval
        var earliest = lastSent + TimeSpan(nanoseconds: Double(interval.ns) * (1 - configuration.joinShare))
        // (A peer's exchange in the future: our clock went back; it is forgotten like lastSent.)
        if let peer = lastPeerExchange, peer <= now {
            let held = peer + TimeSpan(nanoseconds: Double(interval.ns) * (yieldsToPeer ? Self.yieldingMargin : Self.peerExchangeMargin))
            due = max(due, held)
            earliest = max(earliest, held)
        }
        // A probe comes no sooner than a burst interval after the last request: outliers on
        // both ends of a link (each side's requests making the other look again) must not
        // become a storm of exchanges at the round trip's pace.
        guard let probeAt else { return (earliest, due) }
        let probe = max(probeAt, lastSent + configuration.burstInterval)
        return (min(earliest, probe), min(due, probe))
    }

    /// When the oldest outstanding request times out, if any.
    public var nextExpiry: LocalTime? {
        outstanding.first.map { $0.sentAt + configuration.exchangeTimeout }
    }

    /// When the owner should next call in: the earlier of the next send and the next expiry.
    public func nextWakeup(at now: LocalTime, estimate: ClockEstimate?) -> LocalTime {
        let send = nextSendTime(at: now, estimate: estimate)
        guard let expiry = nextExpiry else { return send }
        return min(send, expiry)
    }

    private mutating func record(lost: Bool) {
        lossHistory = lossHistory << 1 | (lost ? 1 : 0)
        outcomes += 1
    }
}
