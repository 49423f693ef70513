@testable import LockstepCore

/// A deterministic, sleep-free simulation of a whole group: several ``Node``s, each on its own
/// simulated device clock, joined by a simulated network (delay, jitter, loss, duplication,
/// partitions). Time is the one true clock `now`; events run in time order.
///
/// In the spirit of quinn's test `Pair`: `run(until:)` jumps from event to event, so minutes of
/// group life take milliseconds of CPU.
struct Simulation {
    struct Host {
        var node: Node
        var clock: DeviceClock
        var endpoint: Endpoint
        /// Everything the node asked its shell to do, with the true time.
        var log: [(time: Int64, directive: NodeDirective)] = []
        var nextTick: Int64 = .max
    }

    struct Network {
        var delayNs: Int64 = 100_000
        var jitterNs: Int64 = 10_000
        var loss: Double = 0
        var duplicate: Double = 0
        /// Pairs (a, b), a < b, that cannot talk.
        var cut: Set<[Int]> = []
        /// Per host: how long after the node's shell stamps a clock request or reply (t1, t3)
        /// the datagram really leaves (a send path), drawn uniformly; none by default.
        var sendLatencyNs: [ClosedRange<Int64>] = []
        /// Whether the shells report when clock datagrams really left (kernel transmit
        /// timestamps), so that nodes can use them (``Node/onTransmitted(_:to:at:now:)``).
        var transmitTimestamps = false
    }

    enum Event {
        case deliver(to: Int, from: Int, message: PeerMessage, source: Endpoint)
        case tick(Int)
        case action(Int, @Sendable (inout Simulation, Int) -> Void)
    }

    var now: Int64 = 0
    var hosts: [Host] = []
    var network = Network()
    var rng: SplitMix64
    private var queue: [(time: Int64, seq: UInt64, event: Event)] = []
    private var seq: UInt64 = 0
    /// Datagrams delivered, dropped.
    var delivered = 0, dropped = 0

    /// `count` hosts; host i has clock `clocks[i]` (default: random offsets up to ±30 s and skews
    /// up to ±200 ppm). All hosts know each other's endpoints (as DNS-SD would tell them) at time 0.
    init(hosts count: Int, seed: UInt64 = 1, clocks: [DeviceClock]? = nil, network: Network = .init(), configure: (inout Node.Configuration) -> Void = { _ in }) {
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
        for i in 0..<count {
            for j in 0..<count where i != j { see(i, j) }
        }
    }

    /// Host `i` learns of host `j` through DNS-SD.
    mutating func see(_ i: Int, _ j: Int) {
        let t = local(i)
        let d = hosts[i].node.onSighting(hosts[j].node.identity.peer, name: "n\(j)", sighting: .init(instance: "n\(j)", interfaceIndex: 2), endpoints: [hosts[j].endpoint], now: t)
        execute(i, d)
    }

    func local(_ i: Int) -> Int64 { hosts[i].clock.device(fromHost: now) }
    func trueTime(_ i: Int, local t: Int64) -> Int64 { hosts[i].clock.host(fromDevice: t) }
    func peer(_ i: Int) -> PeerID { hosts[i].node.identity.peer }

    // MARK: - Driving

    /// Runs every event up to and including true time `t`.
    mutating func run(until t: Int64) {
        while let first = queue.first, first.time <= t {
            queue.removeFirst()
            now = max(now, first.time)
            switch first.event {
            case .deliver(let to, let from, let message, let source):
                let d = hosts[to].node.onMessage(message, from: peer(from), incarnation: hosts[from].node.identity.incarnation, source: source, receivedAt: local(to), now: local(to))
                execute(to, d)
            case .tick(let i):
                guard hosts[i].nextTick == first.time else { continue }
                hosts[i].nextTick = .max
                execute(i, hosts[i].node.onTick(now: local(i)))
            case .action(let i, let body):
                body(&self, i)
            }
        }
        now = max(now, t)
    }

    mutating func run(for duration: Int64) { run(until: now + duration) }

    /// Schedules `body` on host `i` at true time `t`.
    mutating func at(_ t: Int64, on i: Int, _ body: @escaping @Sendable (inout Simulation, Int) -> Void) {
        schedule(t, .action(i, body))
    }

    /// Issues a command on host `i` now.
    @discardableResult
    mutating func issue(_ i: Int, _ command: GroupCommand, item: ItemID? = nil) -> Result<ItemRecord?, CommandError> {
        let (d, result) = hosts[i].node.issue(command, item: item, now: local(i))
        execute(i, d)
        return result
    }

    mutating func execute(_ i: Int, _ directives: [NodeDirective]) {
        for d in directives {
            hosts[i].log.append((now, d))
            guard case .send(var message, let to) = d else { continue }
            var isExchange = false
            switch message {
            case .clockRequest(let ex, _):
                message = .clockRequest(exchange: ex, t1: local(i))
                isExchange = true
            case .clockReply(let ex, let t1, let t2, _):
                message = .clockReply(exchange: ex, t1: t1, t2: t2, t3: local(i))
                isExchange = true
            default: break
            }
            var departure = now
            if isExchange, i < network.sendLatencyNs.count {
                departure += Int64.random(in: network.sendLatencyNs[i], using: &rng)
            }
            if isExchange, network.transmitTimestamps {
                let sent = message
                schedule(departure, .action(i) { sim, i in
                    sim.execute(i, sim.hosts[i].node.onTransmitted(sent, to: to, at: sim.local(i), now: sim.local(i)))
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
        let deadline = hosts[i].node.nextDeadline(now: local(i))
        let t = max(now + 1, trueTime(i, local: deadline))
        if t < hosts[i].nextTick {
            hosts[i].nextTick = t
            schedule(t, .tick(i))
        }
    }

    private mutating func schedule(_ t: Int64, _ e: Event) {
        seq += 1
        let item = (time: t, seq: seq, event: e)
        // Binary search insertion keeps the queue ordered by (time, seq).
        var lo = 0, hi = queue.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if (queue[mid].time, queue[mid].seq) < (t, seq) { lo = mid + 1 } else { hi = mid }
        }
        queue.insert(item, at: lo)
    }

    // MARK: - Network faults

    mutating func partition(_ a: [Int], _ b: [Int]) {
        for i in a { for j in b { network.cut.insert([min(i, j), max(i, j)]) } }
    }

    mutating func heal() { network.cut = [] }
}

