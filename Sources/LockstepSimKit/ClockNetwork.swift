import LockstepCore

/// A network of simulated hosts measuring each other's clocks with the agent's own clock
/// protocol instance, ``PeerClocks``, in the spirit of quinn's `Pair`: a simulated true time
/// (`Int64` nanoseconds), events in a queue, `run(until:)` jumps from one to the next.
///
/// Each host's clock is `device = true + offset + skew·(true − epoch)` (``DeviceClock``), read as
/// its ``LocalTime``. The network carries out each host's directives as the agent's shell would:
/// a request is stamped `t1` as it leaves (and the instance told), the peer's instance answers
/// with `t2` of the arrival and the peer stamps `t3` after a short turnaround; reports are
/// gossiped to the hosts named. Hosts measure the peers in `measuring` (all others by default).
public struct ClockNetwork {
    /// One simulated host: its clock protocol instance and where it is.
    public struct Host {
        public var clocks: PeerClocks
        public let endpoint: Endpoint
        public var incarnation: UInt64 = 1
        /// The peers this host measures.
        public var measures: [Int]
        /// True time of the tick currently queued, to skip stale ones.
        var queuedTick: Int64 = .max
    }

    enum Event {
        case tick(Int)
        case request(from: Int, to: Int, exchange: UInt32, t1: PeerTime, form: RequestForm)
        case reply(from: Int, to: Int, exchange: UInt32, echo: Int64, t2: PeerTime, t3: PeerTime, form: ReplyForm)
        case followUp(from: Int, to: Int, exchange: UInt32, echo: Int64, t3: PeerTime)
        case result(from: Int, to: Int, exchange: UInt32, echo: Int64, t1: PeerTime, t4: PeerTime)
        case report(from: Int, to: Int, ClockReport)
        case action(Int)
    }

    /// The true time.
    public private(set) var now: Int64 = 0
    public var clocks: [DeviceClock]
    /// `legs[a][b]` is the leg a → b.
    public var legs: [[LegModel]]
    public private(set) var hosts: [Host]
    /// The steps of its own clock each host noticed and stepped back (ns, as the directive said).
    public private(set) var ownSteps: [[Int64]]
    var rng: SplitMix64
    /// Reports' delays come from their own stream, so that how often reports go does not change
    /// the exchanges' noise.
    var reportRNG: SplitMix64
    /// Hosts report kernel transmit times (exactly their stamps here: no stack to cross), so they
    /// send follow-ups and `clock_result`s, as agents on Linux do. Off by default: the clock
    /// scenarios were calibrated without them.
    public var transmitStamps = false
    /// Clock datagrams sent (requests, replies, follow-ups and results, lost ones too).
    public private(set) var exchangeDatagrams = 0
    /// How long a host takes between stamping a request's arrival and its reply's departure.
    public var turnaroundNs: ClosedRange<Double> = 10_000...40_000
    private let configuration: PeerClocks.Configuration
    private var queue = EventQueue<Event>()
    private var actions: [(inout ClockNetwork) -> Void] = []

    public init(
        clocks: [DeviceClock],
        link: LinkModel,
        seed: UInt64,
        configuration: PeerClocks.Configuration = .init(),
        measuring: [(Int, Int)]? = nil
    ) {
        self.clocks = clocks
        self.configuration = configuration
        let n = clocks.count
        var legs = [[LegModel]](repeating: [LegModel](repeating: link.forward, count: n), count: n)
        for a in 0..<n { for b in 0..<n where a > b { legs[a][b] = link.backward } }
        self.legs = legs
        self.rng = SplitMix64(seed: seed)
        self.reportRNG = SplitMix64(seed: seed ^ 0x5EED_0F_4E90_4175)
        self.ownSteps = Array(repeating: [], count: n)
        let pairs = measuring ?? (0..<n).flatMap { a in (0..<n).filter { $0 != a }.map { (a, $0) } }
        hosts = (0..<n).map { i in
            Host(
                clocks: PeerClocks(me: Self.id(i), configuration: configuration),
                endpoint: .v4(a: 10, b: 0, c: 0, d: UInt8(truncatingIfNeeded: i + 1), port: 4000),
                measures: pairs.filter { $0.0 == i }.map(\.1))
        }
        for i in 0..<n { start(i) }
    }

    /// The peer id of host `i`.
    public static func id(_ i: Int) -> PeerID { PeerID(high: 0x5117, low: UInt64(i + 1)) }

    /// Sets the leg a → b and b → a.
    public mutating func setLink(_ a: Int, _ b: Int, _ link: LinkModel) {
        legs[a][b] = link.forward
        legs[b][a] = link.backward
    }

    /// Host `host`'s clock at true time `t`.
    public func local(_ host: Int, at t: Int64) -> LocalTime { clocks[host].device(fromHost: t) }

    /// True offset of b relative to a (b − a) at true time `t`, in nanoseconds.
    public func trueOffset(of b: Int, relativeTo a: Int, at t: Int64) -> Double {
        Double(clocks[b].device(fromHost: t).ns - clocks[a].device(fromHost: t).ns)
    }

    /// a's current direct estimate of b.
    public func estimate(_ a: Int, of b: Int) -> ClockEstimate? {
        hosts[a].clocks.estimate(of: Self.id(b), at: local(a, at: now))
    }

    /// a's estimate of b checked against the mesh (``PeerClocks/resolved(_:at:)``).
    public func resolved(_ a: Int, of b: Int) -> MeshClock.ResolvedOffset? {
        hosts[a].clocks.resolved(Self.id(b), at: local(a, at: now))
    }

    /// a's exchanges with b.
    public func link(_ a: Int, _ b: Int) -> PeerClocks.Link? { hosts[a].clocks.links[Self.id(b)] }

    /// Runs `body` at true time `t`.
    public mutating func at(_ t: Int64, _ body: @escaping (inout ClockNetwork) -> Void) {
        actions.append(body)
        queue.push(at: t, .action(actions.count - 1))
    }

    /// Host b restarts now on `newClock`: a new process (fresh state, next incarnation) whose
    /// measurers learn of the restart, as the agent does from the incarnation in b's messages.
    public mutating func restart(_ b: Int, newClock: DeviceClock) {
        clocks[b] = newClock
        hosts[b].clocks = PeerClocks(me: Self.id(b), configuration: configuration)
        hosts[b].incarnation += 1
        start(b)
        for a in hosts.indices where hosts[a].measures.contains(b) {
            hosts[a].clocks.onPeerRestarted(Self.id(b), now: local(a, at: now))
            scheduleTick(a, at: now)
        }
    }

    /// Host b's clock jumps by `byNs` now, and nobody is told (b may notice, from its peers, and
    /// step back: ``ownSteps``).
    public mutating func stepClock(_ b: Int, byNs: Int64) {
        clocks[b].offsetNs += byNs
    }

    /// Runs events until true time `end`, calling `observe` every `step` of true time.
    public mutating func run(until end: Int64, every step: Int64 = 10 * Nanos.millisecond, observe: (inout ClockNetwork) -> Void = { _ in }) {
        var nextObservation = (now / step + 1) * step
        while true {
            let nextEvent = queue.peekTime ?? .max
            if nextObservation <= nextEvent && nextObservation <= end {
                now = nextObservation
                observe(&self)
                nextObservation += step
                continue
            }
            guard nextEvent <= end, let (time, event) = queue.pop() else { break }
            now = time
            handle(event)
        }
        now = end
    }

    // MARK: - The shell

    private mutating func start(_ i: Int) {
        for b in hosts[i].measures { hosts[i].clocks.onPeerReachable(Self.id(b), now: local(i, at: now)) }
        scheduleTick(i, at: now)
    }

    private func routes(_ i: Int) -> [PeerID: PeerClocks.Route] {
        var out: [PeerID: PeerClocks.Route] = [:]
        for b in hosts[i].measures {
            out[Self.id(b)] = PeerClocks.Route(endpoint: hosts[b].endpoint, incarnation: hosts[b].incarnation, vetted: true)
        }
        return out
    }

    private func host(at endpoint: Endpoint) -> Int? { hosts.firstIndex { $0.endpoint == endpoint } }

    private mutating func scheduleTick(_ i: Int, at t: Int64) {
        guard t < hosts[i].queuedTick else { return }
        hosts[i].queuedTick = t
        queue.push(at: t, .tick(i))
    }

    /// Asks host `i` when it next has work, and queues a tick then.
    private mutating func rearm(_ i: Int) {
        let deadline = hosts[i].clocks.nextDeadline(now: local(i, at: now), routes: routes(i))
        scheduleTick(i, at: max(now + 1, clocks[i].host(fromDevice: deadline)))
    }

    /// Sends a datagram from `a` to `b` leaving at true time `t`, unless the leg loses it.
    private mutating func send(_ a: Int, _ b: Int, leaving t: Int64, _ event: Event) {
        switch event {
        case .request, .reply, .followUp, .result: exchangeDatagrams += 1
        default: break
        }
        let delay: Int64?
        if case .report = event { delay = legs[a][b].draw(&reportRNG, at: t) } else { delay = legs[a][b].draw(&rng, at: t) }
        guard let d = delay else { return }
        queue.push(at: t + d, event)
    }

    private mutating func execute(_ i: Int, _ directives: [PeerClocks.Directive]) {
        for directive in directives {
            switch directive {
            case .sendRequest(let exchange, let to, let form):
                guard let b = host(at: to) else { continue }
                let t1 = local(i, at: now)
                hosts[i].clocks.onRequestSent(exchange: exchange, to: to, t1: t1)
                if transmitStamps { hosts[i].clocks.onRequestTransmitted(exchange: exchange, t1: t1, to: to, at: t1) }
                send(i, b, leaving: now, .request(from: i, to: b, exchange: exchange, t1: PeerTime(ours: t1), form: form))
            case .sendReply(let exchange, let echo, let t2, let to, let form):
                guard let a = host(at: to) else { continue }
                let turnaround = Int64(turnaroundNs.lowerBound + rng.unit() * (turnaroundNs.upperBound - turnaroundNs.lowerBound))
                let t3 = local(i, at: now + turnaround)
                send(i, a, leaving: now + turnaround, .reply(from: i, to: a, exchange: exchange, echo: echo, t2: PeerTime(ours: t2), t3: PeerTime(ours: t3), form: form))
                if transmitStamps {
                    for d in hosts[i].clocks.onReplyTransmitted(exchange: exchange, echo: echo, to: to, at: t3) {
                        if case .sendFollowUp(let exchange, let echo, let t3, _) = d {
                            send(i, a, leaving: now + turnaround, .followUp(from: i, to: a, exchange: exchange, echo: echo, t3: PeerTime(ours: t3)))
                        }
                    }
                }
            case .sendResult(let exchange, let echo, let t1, let t4, let to):
                guard let b = host(at: to) else { continue }
                send(i, b, leaving: now, .result(from: i, to: b, exchange: exchange, echo: echo, t1: PeerTime(ours: t1), t4: PeerTime(ours: t4)))
            case .sendReport(let report, let to):
                guard let b = hosts.indices.first(where: { Self.id($0) == to }) else { continue }
                send(i, b, leaving: now, .report(from: i, to: b, report))
            case .sendFollowUp, .refusedReply:
                // Follow-ups go out with their reply (above); no forged replies here.
                continue
            case .ownClockStepped(let by):
                // As the agent does: the device clock steps back, and the clocks are told.
                clocks[i].offsetNs -= by.ns
                ownSteps[i].append(by.ns)
                hosts[i].clocks.onLocalClockCorrected(now: local(i, at: now))
                scheduleTick(i, at: now)
            }
        }
    }

    private mutating func handle(_ event: Event) {
        switch event {
        case .action(let index):
            actions[index](&self)

        case .tick(let i):
            guard hosts[i].queuedTick == now else { return }
            hosts[i].queuedTick = .max
            execute(i, hosts[i].clocks.onTick(now: local(i, at: now), routes: routes(i)))
            rearm(i)

        case .request(let a, let b, let exchange, let t1, let form):
            let t = local(b, at: now)
            var interleaved = false
            if case .interleaved(let result) = form {
                interleaved = true
                if let result { execute(b, hosts[b].clocks.onResult(from: Self.id(a), exchange: result.exchange, echo: result.echo, t1: result.t1, t4: result.t4, now: t)) }
            }
            execute(b, hosts[b].clocks.onRequest(exchange: exchange, t1: t1, receivedAt: t, from: hosts[a].endpoint, peer: Self.id(a), interleaved: interleaved))
            // (As the agent re-arms its timer after every datagram: a request may bring work forward.)
            rearm(b)

        case .reply(let b, let a, let exchange, let echo, let t2, let t3, let form):
            let t4 = local(a, at: now)
            execute(a, hosts[a].clocks.onReply(
                from: Self.id(b), exchange: exchange, echo: echo, t2: t2, t3: t3, receivedAt: t4, source: hosts[b].endpoint, now: t4, form: form))
            rearm(a)

        case .followUp(let b, let a, let exchange, let echo, let t3):
            execute(a, hosts[a].clocks.onFollowUp(from: Self.id(b), exchange: exchange, echo: echo, t3: t3))
            rearm(a)

        case .result(let a, let b, let exchange, let echo, let t1, let t4):
            let t = local(b, at: now)
            execute(b, hosts[b].clocks.onResult(from: Self.id(a), exchange: exchange, echo: echo, t1: t1, t4: t4, now: t))
            rearm(b)

        case .report(let a, let b, let report):
            let route = routes(b)[Self.id(a)]
            let incarnations = Dictionary(uniqueKeysWithValues: hosts.indices.map { (Self.id($0), hosts[$0].incarnation) })
            hosts[b].clocks.onReport(report, from: Self.id(a), route: route, incarnation: { incarnations[$0] }, now: local(b, at: now))
        }
    }
}
