import LockstepCore

/// A deterministic, sleep-free simulation of a whole group: several ``Node``s, each on its own
/// simulated device clock, joined by a simulated network (delay, jitter, loss, duplication,
/// partitions). Time is the one true clock `now`; events run in time order.
///
/// In the spirit of quinn's test `Pair`: `run(until:)` jumps from event to event, so minutes of
/// group life take milliseconds of CPU.
public struct GroupSimulation {
    public struct Host {
        public var node: Node
        public var clock: DeviceClock
        public var endpoint: Endpoint
        /// Everything the node asked its shell to do, with the true time.
        public var log: [(time: Int64, directive: NodeDirective)] = []
        public var nextTick: Int64 = .max
        /// Timer wake-ups so far: ticks run at the node's deadline (as its shell's one timer would).
        public var ticks = 0
    }

    public struct Network {
        public var delayNs: Int64 = 100_000
        public var jitterNs: Int64 = 10_000
        public var loss: Double = 0
        public var duplicate: Double = 0
        /// Pairs (a, b), a < b, that cannot talk.
        public var cut: Set<[Int]> = []
        /// Per host: how long after the node's shell stamps a clock request or reply (t1, t3)
        /// the datagram really leaves (a send path), drawn uniformly; none by default.
        public var sendLatencyNs: [ClosedRange<Int64>] = []
        /// Whether the shells report when clock datagrams really left (kernel transmit
        /// timestamps), so that nodes can use them (``Node/onTransmitted(_:to:at:now:)``).
        public var transmitTimestamps = false

        public init(delayNs: Int64 = 100_000, jitterNs: Int64 = 10_000, loss: Double = 0, duplicate: Double = 0) {
            self.delayNs = delayNs
            self.jitterNs = jitterNs
            self.loss = loss
            self.duplicate = duplicate
        }
    }

    enum Event {
        case deliver(to: Int, from: Int, message: PeerMessage, source: Endpoint)
        case tick(Int)
        case action(Int, @Sendable (inout GroupSimulation, Int) -> Void)
    }

    /// The true time, in nanoseconds.
    public private(set) var now: Int64 = 0
    public var hosts: [Host] = []
    public var network = Network()
    public var rng: SplitMix64
    private var queue = EventQueue<Event>()
    /// Datagrams delivered, dropped.
    public var delivered = 0, dropped = 0

    /// `count` hosts; host i has clock `clocks[i]` (default: random offsets up to ±30 s and skews
    /// up to ±200 ppm). All hosts know each other's endpoints (as DNS-SD would tell them) at time
    /// 0, unless `discovered` is false: then only what ``see(_:_:)`` tells them.
    public init(
        hosts count: Int, seed: UInt64 = 1, clocks: [DeviceClock]? = nil, network: Network = .init(), discovered: Bool = true,
        configure: (inout Node.Configuration) -> Void = { _ in }
    ) {
        rng = SplitMix64(seed: seed)
        self.network = network
        var config = Node.Configuration()
        configure(&config)
        for i in 0..<count {
            let clock = clocks?[i] ?? DeviceClock(offsetNs: Int64.random(in: -30 * Nanos.second...30 * Nanos.second, using: &rng), skewPPM: Double.random(in: -200...200, using: &rng))
            let id = PeerID(high: 0, low: UInt64(i + 1))
            let node = Node(identity: .init(peer: id, incarnation: 1, name: "n\(i)"), configuration: config)
            hosts.append(Host(node: node, clock: clock, endpoint: .v4(a: 10, b: 0, c: 0, d: UInt8(i + 1), port: 4000)))
        }
        for i in 0..<count where discovered {
            for j in 0..<count where i != j { see(i, j) }
        }
    }

    /// Host `i` learns of host `j` through DNS-SD.
    public mutating func see(_ i: Int, _ j: Int) {
        let t = local(i)
        let d = hosts[i].node.onSighting(hosts[j].node.identity.peer, name: "n\(j)", sighting: .init(instance: "n\(j)", interfaceIndex: 2), endpoints: [hosts[j].endpoint], now: t)
        execute(i, d)
    }

    public func local(_ i: Int) -> LocalTime { hosts[i].clock.device(fromHost: now) }
    public func trueTime(_ i: Int, local t: LocalTime) -> Int64 { hosts[i].clock.host(fromDevice: t) }
    public func peer(_ i: Int) -> PeerID { hosts[i].node.identity.peer }

    /// Host `i`'s resolved estimate of host `j`'s clock now (direct, or through the mesh), against
    /// the simulated truth: its signed error and its bound, in ns, and whether it is direct; nil
    /// when host `i` has no estimate of `j`.
    public func resolvedError(_ i: Int, of j: Int) -> (error: Double, bound: Double, direct: Bool)? {
        let t = local(i)
        guard let r = hosts[i].node.clocks.resolved(peer(j), at: t) else { return nil }
        let truth = Double(hosts[j].clock.device(fromHost: trueTime(i, local: t)).ns - t.ns)
        return (r.estimate.offset(at: t) - truth, r.estimate.errorBound(at: t), r.source == .direct)
    }

    // MARK: - Driving

    /// Runs every event up to and including true time `t`.
    public mutating func run(until t: Int64) {
        while let time = queue.peekTime, time <= t, let (_, event) = queue.pop() {
            now = max(now, time)
            switch event {
            case .deliver(let to, let from, let message, let source):
                let d = hosts[to].node.onMessage(message, from: peer(from), incarnation: hosts[from].node.identity.incarnation, proven: true, source: source, receivedAt: local(to), now: local(to))
                execute(to, d)
            case .tick(let i):
                guard hosts[i].nextTick == time else { continue }
                hosts[i].nextTick = .max
                hosts[i].ticks += 1
                execute(i, hosts[i].node.onTick(now: local(i)))
            case .action(let i, let body):
                body(&self, i)
            }
        }
        now = max(now, t)
    }

    public mutating func run(for duration: Int64) { run(until: now + duration) }

    /// Schedules `body` on host `i` at true time `t`.
    public mutating func at(_ t: Int64, on i: Int, _ body: @escaping @Sendable (inout GroupSimulation, Int) -> Void) {
        schedule(t, .action(i, body))
    }

    /// Issues a command on host `i` now; returns how it went.
    @discardableResult
    public mutating func issue(_ i: Int, _ command: GroupCommand, item: ItemID? = nil) -> RequestOutcome? {
        let d = hosts[i].node.onCommand(command, item: item, now: local(i))
        execute(i, d)
        return d.compactMap { if case .reply(let o) = $0 { o } else { nil } }.first
    }

    /// Carries out host `i`'s directives as its shell would: clock messages are stamped as they
    /// leave (and the node told which `t1` a request carried), datagrams cross the network.
    public mutating func execute(_ i: Int, _ directives: [NodeDirective]) {
        for d in directives {
            hosts[i].log.append((now, d))
            let message: PeerMessage
            let to: Endpoint
            var isExchange = false
            switch d {
            case .send(let m, let e):
                message = m
                to = e
            case .sendClockRequest(let ex, let e, let form):
                message = form.message(exchange: ex, t1: local(i))
                to = e
                isExchange = ex != 0
                // Probes too, as the agent does: the echoed t1 of the reply validates the address.
                hosts[i].node.onClockRequestSent(exchange: ex, to: e, t1: local(i))
            case .sendClockReply(let ex, let echo, let t2, let e, let form):
                message = form.message(exchange: ex, echo: echo, t2: t2, t3: local(i))
                to = e
                isExchange = ex != 0
            default:
                continue
            }
            var departure = now
            if isExchange, i < network.sendLatencyNs.count {
                departure += Int64.random(in: network.sendLatencyNs[i], using: &rng)
            }
            if isExchange, network.transmitTimestamps {
                let sent = message
                schedule(departure, .action(i) { sim, i in
                    sim.execute(i, sim.hosts[i].node.onTransmitted(sent, to: to, at: sim.local(i)))
                })
            }
            guard let j = hosts.firstIndex(where: { $0.endpoint == to }) else { continue }
            if network.cut.contains([min(i, j), max(i, j)]) || Double.random(in: 0..<1, using: &rng) < network.loss {
                dropped += 1
                continue
            }
            let copies = Double.random(in: 0..<1, using: &rng) < network.duplicate ? 2 : 1
            for _ in 0..<copies {
                let delay = network.delayNs + (network.jitterNs > 0 ? Int64.random(in: -network.jitterNs...network.jitterNs, using: &rng) : 0)
                schedule(departure + max(1, delay), .deliver(to: j, from: i, message: message, source: hosts[i].endpoint))
                delivered += 1
            }
        }
        let deadline = hosts[i].node.nextWakeup(now: local(i))
        let t = max(now + 1, trueTime(i, local: deadline))
        // Moved either way, as the agent's timer is: a deadline that went away (a follow-up that
        // came before its wait ran out) must not wake the node for nothing.
        if t != hosts[i].nextTick {
            hosts[i].nextTick = t
            schedule(t, .tick(i))
        }
    }

    private mutating func schedule(_ t: Int64, _ e: Event) {
        queue.push(at: t, e)
    }

    // MARK: - Network faults

    public mutating func partition(_ a: [Int], _ b: [Int]) {
        for i in a { for j in b { network.cut.insert([min(i, j), max(i, j)]) } }
    }

    public mutating func heal() { network.cut = [] }
}

