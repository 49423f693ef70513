/// Decides when to send the next clock exchange to one peer, and which exchanges are lost.
///
/// One instance per peer, a value type; time is an argument. The shell asks ``nextWakeup(estimate:)``,
/// sleeps until then, calls ``expire(atLocal:)`` to learn which requests are lost, and sends a
/// request when ``shouldSend(atLocal:estimate:)`` says so, telling the scheduler with
/// ``onSent(exchangeID:atLocal:)``. Replies go through ``onReply(exchangeID:atLocal:)``, which
/// matches them to their request (so a stray or duplicated reply is not mistaken for a sample).
///
/// Rate:
/// - **Burst** for ``Configuration/burstDurationNs`` after a peer appears (or restarts, or its clock
///   steps): one exchange every ``Configuration/burstIntervalNs``, so that an estimate is usable
///   after a few round trips and the skew is known within a second or two.
/// - **Steady** afterwards: an interval between ``Configuration/minIntervalNs`` and
///   ``Configuration/maxIntervalNs``. It shortens as the statistical bound half an interval ahead
///   exceeds ``Configuration/targetBoundNs`` (a wide bound means jitter, a fast-growing one an
///   uncertain skew), and by `1 + lossFactor × recent loss rate` (up to the last 32 exchanges).
///
/// An outlier (a possible clock step) asks for a quick second look: ``onVerdict(_:atLocal:)``.
///
/// Loss: a request with no reply after ``Configuration/exchangeTimeoutNs`` is lost. Requests never
/// wait for each other, and at most ``Configuration/maxOutstanding`` are remembered (sending one
/// more forgets the oldest, which counts as lost). A reply to a forgotten request is `.unknown`.
///
/// Compared with NTP's poll process (RFC 5905 §13), the steady rate is far faster (seconds, not
/// minutes) and adapts to the bound rather than to a clock discipline's time constant; chrony's
/// `iburst` is the model for the burst.
public struct ExchangeScheduler: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// Interval during the burst.
        public var burstIntervalNs: Int64
        /// Length of the burst after a peer appears.
        public var burstDurationNs: Int64
        /// Shortest steady interval (fastest rate).
        public var minIntervalNs: Int64
        /// Longest steady interval (slowest rate).
        public var maxIntervalNs: Int64
        /// The bound at which the steady rate is at its slowest; wider bounds speed it up.
        public var targetBoundNs: Double
        /// How much recent losses speed the rate up: the interval is divided by `1 + lossFactor × lossRate`.
        public var lossFactor: Double
        /// A request with no reply after this long is lost.
        public var exchangeTimeoutNs: Int64
        /// Most requests awaiting a reply.
        public var maxOutstanding: Int

        public init(
            burstIntervalNs: Int64 = 25 * Nanos.millisecond,
            burstDurationNs: Int64 = 1_500 * Nanos.millisecond,
            minIntervalNs: Int64 = 100 * Nanos.millisecond,
            maxIntervalNs: Int64 = 250 * Nanos.millisecond,
            targetBoundNs: Double = 5_000,
            lossFactor: Double = 4,
            exchangeTimeoutNs: Int64 = 1 * Nanos.second,
            maxOutstanding: Int = 16
        ) {
            precondition(minIntervalNs > 0 && minIntervalNs <= maxIntervalNs && maxOutstanding >= 1)
            self.burstIntervalNs = burstIntervalNs
            self.burstDurationNs = burstDurationNs
            self.minIntervalNs = minIntervalNs
            self.maxIntervalNs = maxIntervalNs
            self.targetBoundNs = targetBoundNs
            self.lossFactor = lossFactor
            self.exchangeTimeoutNs = exchangeTimeoutNs
            self.maxOutstanding = maxOutstanding
        }
    }

    /// The outcome of matching a reply.
    public enum ReplyMatch: Sendable, Equatable {
        /// The reply answers a request sent at `sentAtLocal` (the caller may check it against `t1`).
        case matched(sentAtLocal: Int64)
        /// No such request is waiting: late (already counted lost), duplicated, or forged.
        case unknown
    }

    public let configuration: Configuration
    /// Requests awaiting a reply, oldest first.
    private var outstanding: ContiguousArray<(id: UInt64, sentAt: Int64)>
    private var burstUntil: Int64
    private var lastSent: Int64?
    /// A send wanted sooner than the rate says (after an outlier).
    private var probeAt: Int64?
    /// The last 32 outcomes, newest in bit 0: 1 = lost.
    private var lossHistory: UInt32 = 0
    private var outcomes = 0

    /// A scheduler for a peer that appeared at local time `appearedAtLocal`: starts with a burst.
    public init(configuration: Configuration = .init(), appearedAtLocal: Int64) {
        self.configuration = configuration
        self.outstanding = []
        self.outstanding.reserveCapacity(configuration.maxOutstanding)
        self.burstUntil = appearedAtLocal &+ configuration.burstDurationNs
    }

    /// Starts a new burst: the peer restarted or its clock stepped. Outstanding requests stay.
    public mutating func restartBurst(atLocal now: Int64) {
        burstUntil = now &+ configuration.burstDurationNs
        lastSent = nil
    }

    /// Tells the scheduler what the estimator made of a reply. An outlier asks for a quick second
    /// look (so that a clock step is confirmed or dismissed within a few round trips, not
    /// seconds); a step restarts the burst.
    public mutating func onVerdict(_ verdict: ClockEstimator.SampleVerdict, atLocal now: Int64) {
        switch verdict {
        case .rejectedOutlier:
            probeAt = now &+ configuration.burstIntervalNs
        case .clockStepped:
            restartBurst(atLocal: now)
        case .accepted, .rejectedDelay, .rejectedInvalid:
            break
        }
    }

    /// True while bursting.
    public func isBursting(atLocal now: Int64) -> Bool { now < burstUntil }

    /// Requests awaiting a reply.
    public var outstandingCount: Int { outstanding.count }

    /// Fraction of the recent exchanges (up to 32) that were lost.
    public var recentLossRate: Double {
        let n = min(outcomes, 32)
        return n == 0 ? 0 : Double(lossHistory.nonzeroBitCount) / Double(n)
    }

    // MARK: - Events

    /// A request went out.
    public mutating func onSent(exchangeID: UInt64, atLocal now: Int64) {
        if outstanding.count == configuration.maxOutstanding {
            outstanding.removeFirst()
            record(lost: true)
        }
        outstanding.append((exchangeID, now))
        lastSent = now
        probeAt = nil
    }

    /// A reply came in; matches it to its request.
    public mutating func onReply(exchangeID: UInt64, atLocal now: Int64) -> ReplyMatch {
        guard let index = outstanding.firstIndex(where: { $0.id == exchangeID }) else { return .unknown }
        let sentAt = outstanding[index].sentAt
        outstanding.remove(at: index)
        record(lost: false)
        return .matched(sentAtLocal: sentAt)
    }

    /// Drops the requests that timed out by `now` and returns their ids (they are lost).
    public mutating func expire(atLocal now: Int64) -> [UInt64] {
        var lost: [UInt64] = []
        while let first = outstanding.first, now &- first.sentAt >= configuration.exchangeTimeoutNs {
            lost.append(first.id)
            outstanding.removeFirst()
            record(lost: true)
        }
        return lost
    }

    // MARK: - Timing

    /// The interval between requests given the current estimate:
    /// `maxInterval / max(1, bound half an interval ahead / targetBound) / (1 + lossFactor × lossRate)`,
    /// no shorter than `minInterval`; the burst interval while bursting or without an estimate.
    public func interval(atLocal now: Int64, estimate: ClockEstimate?) -> Int64 {
        if now < burstUntil { return configuration.burstIntervalNs }
        guard let estimate else { return configuration.burstIntervalNs }
        let slowest = Double(configuration.maxIntervalNs)
        let ahead = now &+ configuration.maxIntervalNs / 2
        let need = estimate.errorBound(atLocal: ahead) / configuration.targetBoundNs
        var interval = slowest / (need.isFinite ? max(1, need) : .infinity)
        interval /= 1 + configuration.lossFactor * recentLossRate
        return Int64(max(Double(configuration.minIntervalNs), interval))
    }

    /// When the next request should go out.
    public func nextSendTime(atLocal now: Int64, estimate: ClockEstimate?) -> Int64 {
        guard let lastSent else { return now }
        let regular = lastSent &+ interval(atLocal: now, estimate: estimate)
        return min(regular, probeAt ?? regular)
    }

    /// True when a request should go out now.
    public func shouldSend(atLocal now: Int64, estimate: ClockEstimate?) -> Bool {
        now >= nextSendTime(atLocal: now, estimate: estimate)
    }

    /// When the oldest outstanding request times out, if any.
    public var nextExpiry: Int64? {
        outstanding.first.map { $0.sentAt &+ configuration.exchangeTimeoutNs }
    }

    /// When the shell should next call in: the earlier of the next send and the next expiry.
    public func nextWakeup(atLocal now: Int64, estimate: ClockEstimate?) -> Int64 {
        let send = nextSendTime(atLocal: now, estimate: estimate)
        guard let expiry = nextExpiry else { return send }
        return min(send, expiry)
    }

    private mutating func record(lost: Bool) {
        lossHistory = lossHistory << 1 | (lost ? 1 : 0)
        outcomes += 1
    }
}
