/// Kernel transmit timestamps for one peer's clock exchanges: the two-step scheme of PTP's
/// follow-up messages (IEEE 1588), applied to both ends of a four-timestamp exchange.
///
/// The agent stamps `t1` and `t3` just before it seals and sends a datagram; on this 2-core lab
/// machine the datagram reaches the device driver 10–45 µs later, and how much later differs
/// between the two ends, which biases the offset by half the difference. Where the kernel reports
/// when a datagram really left (Linux software transmit timestamps, `SO_TIMESTAMPING`), both ends
/// use that instead:
/// - **`t1`**: the requester learns its request's transmit time soon after sending
///   (``onRequestTransmitted(exchange:t1:at:)``) and puts it into the sample when the reply comes.
/// - **`t3`**: the replier learns its reply's transmit time after the reply has gone, so it sends
///   it in a `clock_follow_up` (§4.2a of the peer protocol). A requester whose peer sends
///   follow-ups holds each reply until its follow-up arrives (``onFollowUp(exchange:t1:t3:)``),
///   or uses the reply as it is after ``Configuration/followUpWait`` (the follow-up was lost).
///   In interleaved form (§4.2c) the transmit time comes with the peer's next reply instead, and
///   the reply waits that long (``hold(_:now:wait:)``).
///
/// A sample with a user-space stamp is never *faster* than one with the kernel's: the user stamp
/// is earlier than the real transmit time, so it only lengthens its direction's measured delay.
/// The estimator's minimum-delay filter therefore ignores such samples when kernel-stamped ones
/// are around, and mixing the two (a lost follow-up, a peer without transmit timestamps) costs
/// precision, never correctness.
///
/// A value type with no I/O; every time is an argument.
public struct TransmitStamps: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// How long a reply waits for its follow-up before it is used with its own `t3`.
        public var followUpWait: TimeSpan
        /// A kernel transmit time later than the user stamp by more than this is not believed.
        public var maxSendLatency: TimeSpan
        /// How many requests' transmit times, held replies and early follow-ups are remembered.
        public var capacity: Int

        public init(followUpWait: TimeSpan = .milliseconds(50), maxSendLatency: TimeSpan = .milliseconds(20), capacity: Int = 16) {
            precondition(capacity >= 1 && followUpWait >= .zero && maxSendLatency >= .zero)
            self.followUpWait = followUpWait
            self.maxSendLatency = maxSendLatency
            self.capacity = capacity
        }
    }

    /// A sample ready for the estimator, and which of its send times are the kernel's.
    public struct Ready: Sendable, Equatable {
        public var sample: ClockSample
        /// The exchange, and its `t1` as the request carried it (what the reply echoed).
        public var exchange: UInt32 = 0
        public var wireT1: Int64 = 0
        /// `t1` is the kernel's transmit time of the request.
        public var kernelT1: Bool
        /// `t3` is the kernel's transmit time of the reply (from a follow-up).
        public var kernelT3: Bool
        /// The reply was in interleaved form: its result went with the next request, not alone.
        public var interleaved = false
    }

    struct Held: Sendable {
        var exchange: UInt32
        /// The request's `t1` as the reply echoed it (the follow-up echoes the same).
        var wireT1: Int64
        var ready: Ready
        var deadline: LocalTime
        /// A request went after it that could bring its transmit time: always for a plain reply
        /// (its follow-up comes alone); for one in interleaved form, once our next request left.
        var asked: Bool
    }

    public let configuration: Configuration
    /// Requests' kernel transmit times, oldest first.
    private var requests: [(exchange: UInt32, t1: LocalTime, sentAt: LocalTime)] = []
    /// Replies waiting for their follow-up, oldest first.
    private var held: [Held] = []
    /// Follow-ups that overtook their reply, oldest first: the echoed `t1`, and `t3`.
    private var early: [(exchange: UInt32, t1: Int64, t3: PeerTime)] = []
    /// True once the peer has sent a follow-up: its replies are then held for theirs.
    public private(set) var peerSendsFollowUps = false
    /// Replies used without their follow-up because it did not come in time. A reply in
    /// interleaved form whose link sent no request after it (the pair's other end took over
    /// measuring, or the link stopped) is used as it is and not counted: nothing was late.
    public private(set) var followUpsMissed: UInt64 = 0
    /// Follow-ups or transmit times that were not believable (earlier than the user stamp, or far later).
    public private(set) var implausible: UInt64 = 0

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    /// The kernel says request `exchange`, sent with `t1` (the user stamp), left at `sentAt`.
    public mutating func onRequestTransmitted(exchange: UInt32, t1: LocalTime, at sentAt: LocalTime) {
        guard plausible(user: t1.ns, kernel: sentAt.ns) else {
            implausible += 1
            return
        }
        if requests.count == configuration.capacity { requests.removeFirst() }
        requests.append((exchange, t1, sentAt))
    }

    /// A matched reply arrived, as `sample` (`t1` as sent and echoed, `t4` its kernel receive
    /// time). Returns the sample to use now, or nil when it is held for its follow-up (then it
    /// comes out of ``onFollowUp(exchange:t1:t3:)`` or ``expire(now:)``).
    public mutating func onReply(exchange: UInt32, sample: ClockSample, now: LocalTime) -> Ready? {
        hold(stamped(exchange: exchange, sample: sample), now: now)
    }

    /// A matched reply's sample with the request's kernel transmit time for `t1` where it is
    /// known (that time is then used up).
    public mutating func stamped(exchange: UInt32, sample: ClockSample) -> Ready {
        var ready = Ready(sample: sample, exchange: exchange, wireT1: sample.t1.ns, kernelT1: false, kernelT3: false)
        if let i = requests.firstIndex(where: { $0.exchange == exchange && $0.t1 == sample.t1 }) {
            ready.sample.t1 = requests[i].sentAt
            ready.kernelT1 = true
            requests.remove(at: i)
        }
        return ready
    }

    /// `ready` (from ``stamped(exchange:sample:)``) to use now, or nil when it is held for its
    /// follow-up: until `wait` from `now` (default ``Configuration/followUpWait``; a reply in
    /// interleaved form waits for the next reply, which carries its transmit time).
    public mutating func hold(_ ready: Ready, now: LocalTime, wait: TimeSpan? = nil) -> Ready? {
        if let i = early.firstIndex(where: { $0.exchange == ready.exchange && $0.t1 == ready.wireT1 }) {
            let t3 = early[i].t3
            early.remove(at: i)
            return completed(ready, t3: t3)
        }
        guard peerSendsFollowUps else { return ready }
        if held.count == configuration.capacity {
            followUpsMissed += 1
            held.removeFirst()
        }
        held.append(Held(exchange: ready.exchange, wireT1: ready.wireT1, ready: ready, deadline: now + (wait ?? configuration.followUpWait), asked: !ready.interleaved))
        return nil
    }

    /// A request in interleaved form left at `now`: the replies held for it can now get their
    /// transmit times, with its reply; from now they wait as a plain reply waits for its
    /// follow-up (``Configuration/followUpWait``), then are used as they are and counted as missed.
    public mutating func onInterleavedRequestSent(now: LocalTime) {
        for i in held.indices where held[i].ready.interleaved && !held[i].asked {
            held[i].asked = true
            held[i].deadline = now + configuration.followUpWait
        }
    }

    /// A follow-up from the peer: the reply to `exchange` (echoing `t1`) left at `t3`. Returns the
    /// completed sample when that reply was held for it.
    public mutating func onFollowUp(exchange: UInt32, t1: Int64, t3: PeerTime) -> Ready? {
        peerSendsFollowUps = true
        if let i = held.firstIndex(where: { $0.exchange == exchange && $0.wireT1 == t1 }) {
            let ready = held[i].ready
            held.remove(at: i)
            return completed(ready, t3: t3)
        }
        // Its reply is still on the way (or was used already, or lost): keep it a while.
        if early.count == configuration.capacity { early.removeFirst() }
        early.append((exchange, t1, t3))
        return nil
    }

    /// Replies whose follow-up did not arrive by `now`: to be used with their own `t3`.
    public mutating func expire(now: LocalTime) -> [Ready] {
        // (Not in deadline order when replies of both forms are held: a link trying the
        // interleaved form still has plain replies out.)
        guard let next = nextDeadline, next <= now else { return [] }
        let due = held.filter { $0.deadline <= now }
        held.removeAll { $0.deadline <= now }
        followUpsMissed += UInt64(due.count(where: \.asked))
        return due.map(\.ready)
    }

    /// When ``expire(now:)`` next has work.
    public var nextDeadline: LocalTime? { held.lazy.map(\.deadline).min() }

    private mutating func completed(_ ready: Ready, t3: PeerTime) -> Ready {
        guard plausible(user: ready.sample.t3.ns, kernel: t3.ns) else {
            implausible += 1
            return ready
        }
        var ready = ready
        ready.sample.t3 = t3
        ready.kernelT3 = true
        return ready
    }

    /// The kernel stamps a datagram after the agent does, and soon after.
    private func plausible(user: Int64, kernel: Int64) -> Bool {
        let latency = kernel.subtractingReportingOverflow(user)
        return !latency.overflow && latency.partialValue >= 0 && latency.partialValue <= configuration.maxSendLatency.ns
    }
}
