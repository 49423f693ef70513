/// One agent's protocol logic, whole: membership, clock estimation, and (in the files beside
/// this one) group state and player coordination. A value type with no I/O: every input is an
/// `on…` call with the current time, every output a ``NodeDirective`` for the shell to carry out.
///
/// Times are on the node's *local clock*: the agent's device clock (the host's monotonic clock
/// in production; a simulated one in tests). Several nodes with a simulated network between them
/// make a deterministic, sleep-free simulation of a whole group (see `Tests/LockstepCoreTests`).
public struct Node: Sendable {
    public struct Identity: Sendable, Equatable {
        public var peer: PeerID
        public var incarnation: UInt64
        public var name: String

        public init(peer: PeerID, incarnation: UInt64, name: String) {
            self.peer = peer
            self.incarnation = incarnation
            self.name = name
        }
    }

    public struct Configuration: Sendable {
        public var membership = Membership.Configuration()
        public var estimator = ClockEstimator.Configuration()
        public var exchanges = ExchangeScheduler.Configuration()
        public var transmitStamps = TransmitStamps.Configuration()
        public var mesh = MeshClock.Configuration()
        /// How often direct clock estimates are gossiped to the peers, for closure checks.
        public var clockReportIntervalNs: Int64 = 1 * Nanos.second
        public var replica = Replica.Configuration()
        public var lead = LeadTime.Configuration()
        public var sync = SyncPolicy.Configuration()
        /// Suspension reasons that make the group wait (held) instead of playing on without the
        /// suspended player (SharePlay's `suspensionReasonsThatTriggerWaiting`).
        public var waitingReasons: Set<String> = []
        /// A group waiting for readiness starts anyway after this long; laggards catch up later.
        public var waitTimeoutNs: Int64 = 8 * Nanos.second

        public init() {}
    }

    /// The clock exchanges with one reachable peer.
    public struct PeerClock: Sendable {
        public var estimator: ClockEstimator
        public var scheduler: ExchangeScheduler
        /// Kernel transmit times of this peer's exchanges: our requests', and its replies' (follow-ups).
        public var stamps: TransmitStamps
        var nextExchange: UInt32 = 0
        /// Where the outstanding exchanges went (a reply from another path is not a sample of this one).
        var sentTo: Endpoint?
        public var lost: UInt64 = 0
        public var rejected: UInt64 = 0
        /// Samples whose send times were both the kernel's (t1 and, from a follow-up, t3).
        public var kernelStamped: UInt64 = 0
        /// Whether the last sample used had both send times from the kernel.
        public var lastKernelStamped = false

        init(now: Int64, configuration: Configuration) {
            estimator = ClockEstimator(configuration: configuration.estimator)
            scheduler = ExchangeScheduler(configuration: configuration.exchanges, appearedAtLocal: now)
            stamps = TransmitStamps(configuration: configuration.transmitStamps)
        }
    }

    public let identity: Identity
    public let configuration: Configuration
    public private(set) var membership: Membership
    public private(set) var clocks: [PeerID: PeerClock] = [:]
    public private(set) var mesh: MeshClock
    private var nextClockReport: Int64 = .min
    /// Reachable peers whose hello (their name) has not arrived yet, and when to ask again: a
    /// hello lost on a lossy link is asked for until one gets through.
    private var helloDue: [PeerID: Int64] = [:]
    /// How often a missing hello is asked for again.
    static let helloRetryNs: Int64 = 1 * Nanos.second
    /// The group state and its dissemination.
    public internal(set) var replica: Replica
    /// Every peer's players, as they last said (this node's own included).
    public internal(set) var participants: [PeerID: ParticipantRecord] = [:]
    /// For records relayed by a peer other than their origin: the anchor on the relay's clock.
    var relayAnchors: [Stamp: (via: PeerID, anchorTime: Int64, boundNs: Int64)] = [:]
    /// The players connected to this agent.
    public internal(set) var players: [UInt32: PlayerSession] = [:]

    public init(identity: Identity, configuration: Configuration = .init()) {
        self.identity = identity
        self.configuration = configuration
        self.membership = Membership(me: identity.peer, configuration: configuration.membership)
        self.mesh = MeshClock(localID: identity.peer, configuration: configuration.mesh)
        self.replica = Replica(me: identity.peer, incarnation: identity.incarnation, configuration: configuration.replica)
        self.participants[identity.peer] = ParticipantRecord(peer: identity.peer, incarnation: identity.incarnation, version: 0, players: [])
    }

    // MARK: - Discovery

    /// DNS-SD saw `peer` (in our group) on an interface, with these addresses.
    public mutating func onSighting(_ peer: PeerID, name: String?, sighting: Membership.Sighting, endpoints: [Endpoint], now: Int64) -> [NodeDirective] {
        var out = apply(membership.onSighting(peer, name: name, sighting: sighting, endpoints: endpoints, now: now), now: now)
        out += onTick(now: now)
        return out
    }

    /// DNS-SD withdrew a sighting.
    public mutating func onWithdrawal(_ sighting: Membership.Sighting, now: Int64) -> [NodeDirective] {
        var out = apply(membership.onWithdrawal(sighting, now: now), now: now)
        out += onTick(now: now)
        return out
    }

    /// A peer to contact without discovery.
    public mutating func addStatic(_ endpoint: Endpoint, now: Int64) -> [NodeDirective] {
        membership.addStatic(endpoint)
        return onTick(now: now)
    }

    // MARK: - Datagrams

    /// An authenticated message from `sender` arrived from `source` at `receivedAt` (kernel time).
    public mutating func onMessage(_ message: PeerMessage, from sender: PeerID, incarnation: UInt64, source: Endpoint, receivedAt: Int64, now: Int64) -> [NodeDirective] {
        var out = apply(membership.onHeard(sender, incarnation: incarnation, from: source, now: receivedAt), now: now)
        switch message {
        case .clockRequest(let exchange, let t1):
            // t3 is stamped by the shell at the moment the reply leaves.
            out.append(.send(.clockReply(exchange: exchange, t1: t1, t2: receivedAt, t3: 0), to: source))
        case .clockReply(let exchange, let t1, let t2, let t3):
            onClockReply(sender, exchange: exchange, sample: ClockSample(t1: t1, t2: t2, t3: t3, t4: receivedAt), source: source, now: now)
        case .clockFollowUp(let exchange, let t1, let t3):
            guard var c = clocks[sender] else { break }
            let ready = c.stamps.onFollowUp(exchange: exchange, t1: t1, t3: t3)
            clocks[sender] = c
            if let ready { ingest(ready, from: sender) }
        case .hello(let name, let wantsReply):
            helloDue[sender] = nil
            out += apply(membership.onName(sender, name: name), now: now)
            if wantsReply { out.append(.send(.hello(name: identity.name, wantsReply: false), to: source)) }
        case .goodbye:
            out += apply(membership.onGoodbye(sender, now: now), now: now)
        case .itemRecord, .currentRecord, .ack, .digest, .participant:
            out += onGroupMessage(message, from: sender, source: source, now: now)
        case .clockReport(let report):
            for entry in report.entries where entry.peer != identity.peer {
                // A report about an earlier life of its target measured another clock epoch.
                if let known = membership.peers[entry.peer]?.incarnation, entry.incarnation < known { continue }
                mesh.updateReport(from: sender, target: entry.peer, estimate: entry.estimate, receivedAtLocal: now)
            }
        default:
            break
        }
        if out.contains(where: \.affectsPlayers) {
            out += refreshPlayers(now: now)
        }
        return out
    }

    private mutating func onClockReply(_ peer: PeerID, exchange: UInt32, sample: ClockSample, source: Endpoint, now: Int64) {
        guard exchange != 0, var c = clocks[peer] else { return }
        guard case .matched = c.scheduler.onReply(exchangeID: UInt64(exchange), atLocal: sample.t4) else { return }
        guard c.sentTo == nil || c.sentTo == source else {
            clocks[peer] = c
            return
        }
        let ready = c.stamps.onReply(exchange: exchange, sample: sample, now: now)
        clocks[peer] = c
        if let ready { ingest(ready, from: peer) }
    }

    /// A complete sample (its follow-up in, or not coming) goes to the estimator.
    private mutating func ingest(_ ready: TransmitStamps.Ready, from peer: PeerID) {
        guard var c = clocks[peer] else { return }
        let sample = ready.sample
        let verdict = c.estimator.onSample(sample)
        c.scheduler.onVerdict(verdict, atLocal: sample.t4)
        switch verdict {
        case .clockStepped:
            c.scheduler.restartBurst(atLocal: sample.t4)
            mesh.removePeer(peer)
        case .accepted:
            c.lastKernelStamped = ready.kernelT1 && ready.kernelT3
            if c.lastKernelStamped { c.kernelStamped += 1 }
        default:
            c.rejected += 1
        }
        if let estimate = c.estimator.estimate(atLocal: sample.t4) { mesh.updateLocal(peer: peer, estimate: estimate) }
        clocks[peer] = c
    }

    /// The kernel says `message` (a clock request or reply, as sent) left for `destination` at
    /// `sentAt` (local clock). A request's time replaces its `t1` when the reply comes; a reply's
    /// goes to the requester in a follow-up.
    public mutating func onTransmitted(_ message: PeerMessage, to destination: Endpoint, at sentAt: Int64, now: Int64) -> [NodeDirective] {
        switch message {
        case .clockRequest(let exchange, let t1) where exchange != 0:
            guard let peer = clocks.first(where: { $0.value.sentTo == destination })?.key else { return [] }
            clocks[peer]?.stamps.onRequestTransmitted(exchange: exchange, t1: t1, at: sentAt)
            return []
        case .clockReply(let exchange, let t1, _, _) where exchange != 0:
            return [.send(.clockFollowUp(exchange: exchange, t1: t1, t3: sentAt), to: destination)]
        default:
            return []
        }
    }

    // MARK: - Time

    /// Time passes: lost peers, probes, clock exchanges.
    public mutating func onTick(now: Int64) -> [NodeDirective] {
        var out = apply(membership.onTick(now: now), now: now)
        for endpoint in membership.probes(now: now) {
            out.append(.send(.clockRequest(exchange: 0, t1: 0), to: endpoint))
        }
        for (peer, due) in helloDue where due <= now {
            guard membership.isReachable(peer) else {
                helloDue[peer] = nil
                continue
            }
            out += askHello(peer, now: now)
        }
        for peer in membership.reachable {
            guard var c = clocks[peer], let endpoint = membership.endpoint(of: peer) else { continue }
            c.lost += UInt64(c.scheduler.expire(atLocal: now).count)
            let late = c.stamps.expire(now: now)
            if !late.isEmpty {
                clocks[peer] = c
                for ready in late { ingest(ready, from: peer) }
                guard let updated = clocks[peer] else { continue }
                c = updated
            }
            let estimate = c.estimator.estimate(atLocal: now)
            if c.scheduler.shouldSend(atLocal: now, estimate: estimate) {
                c.nextExchange = c.nextExchange == .max ? 1 : c.nextExchange + 1
                c.scheduler.onSent(exchangeID: UInt64(c.nextExchange), atLocal: now)
                if c.sentTo != endpoint {
                    // A new path: samples from the old one must not mix with this one's.
                    c.sentTo = endpoint
                }
                out.append(.send(.clockRequest(exchange: c.nextExchange, t1: 0), to: endpoint))
            }
            clocks[peer] = c
        }
        out += onGroupTick(now: now)
        out += refreshPlayers(now: now)
        if now >= nextClockReport {
            nextClockReport = now + configuration.clockReportIntervalNs
            mesh.expire(atLocal: now)
            out += clockReports()
        }
        return out
    }

    /// This node's direct estimates, to every reachable peer, in datagram-sized pieces.
    private func clockReports() -> [NodeDirective] {
        let entries: [ClockReport.Entry] = mesh.directEstimates.compactMap { peer, estimate in
            guard let incarnation = membership.peers[peer]?.incarnation else { return nil }
            return ClockReport.Entry(peer: peer, incarnation: incarnation, estimate: estimate)
        }.sorted { $0.peer < $1.peer }
        guard !entries.isEmpty else { return [] }
        var out: [NodeDirective] = []
        for start in stride(from: 0, to: entries.count, by: PeerMessage.maxReportEntries) {
            let chunk = Array(entries[start..<min(start + PeerMessage.maxReportEntries, entries.count)])
            for peer in membership.reachable {
                guard let endpoint = membership.endpoint(of: peer) else { continue }
                out.append(.send(.clockReport(ClockReport(entries: chunk.filter { $0.peer != peer })), to: endpoint))
            }
        }
        return out
    }

    /// When ``onTick(now:)`` next has work.
    public func nextDeadline(now: Int64) -> Int64 {
        var next = min(membership.nextDeadline(after: now), nextClockReport == .min ? now : nextClockReport)
        next = min(next, replica.nextDeadline(now: now))
        next = min(next, playersDeadline(now: now))
        next = min(next, helloDue.values.min() ?? .max)
        for (peer, c) in clocks where membership.isReachable(peer) {
            next = min(next, c.scheduler.nextWakeup(atLocal: now, estimate: c.estimator.estimate(atLocal: now)))
            next = min(next, c.stamps.nextDeadline ?? .max)
        }
        return max(next, now)
    }

    /// The local clock stepped (a test hook simulates this; a monotonic clock never does). Every
    /// time kept on the old scale is now meaningless: clock estimates start afresh with a burst,
    /// peers count as just heard, and retransmissions and reports are due at once. Records this
    /// node issued before the step keep their anchors (they are on the old scale) until superseded.
    public mutating func onLocalClockStep(now: Int64) -> [NodeDirective] {
        membership.rebase(now: now)
        for peer in Array(clocks.keys) {
            clocks[peer] = PeerClock(now: now, configuration: configuration)
            mesh.removePeer(peer)
        }
        replica.rebase(now: now)
        for peer in Array(helloDue.keys) { helloDue[peer] = now }
        nextClockReport = now
        return onTick(now: now)
    }

    /// What to send before shutting down: a goodbye to every reachable peer.
    public func shutdown() -> [NodeDirective] {
        membership.reachable.compactMap { peer in membership.endpoint(of: peer).map { .send(.goodbye, to: $0) } }
    }

    // MARK: - Queries

    /// The current direct estimate of `peer`'s clock (peer minus local), if usable.
    public func clockEstimate(of peer: PeerID, now: Int64) -> ClockEstimate? {
        clocks[peer]?.estimator.estimate(atLocal: now)
    }

    /// The estimate of `peer`'s clock to convert times with: the direct one, checked against the
    /// mesh, or a two-hop path when the direct link is distrusted or missing.
    public func resolvedClock(of peer: PeerID, now: Int64) -> MeshClock.ResolvedOffset? {
        mesh.resolved(peer: peer, atLocal: now)
    }

    // MARK: - Membership events

    /// Sends `peer` our hello asking for its own, and asks again every ``helloRetryNs`` until
    /// its hello (its name) arrives.
    private mutating func askHello(_ peer: PeerID, now: Int64) -> [NodeDirective] {
        helloDue[peer] = now + Self.helloRetryNs
        guard let endpoint = membership.endpoint(of: peer) else { return [] }
        return [.send(.hello(name: identity.name, wantsReply: true), to: endpoint)]
    }

    private mutating func apply(_ events: [Membership.Event], now: Int64) -> [NodeDirective] {
        var out: [NodeDirective] = []
        for event in events {
            out.append(.membership(event))
            switch event {
            case .stateChanged(let peer, _, .reachable):
                if clocks[peer] == nil {
                    clocks[peer] = PeerClock(now: now, configuration: configuration)
                }
                out += askHello(peer, now: now)
                out += greet(peer)
            case .stateChanged(let peer, _, .lost):
                helloDue[peer] = nil
                replica.forget(peer)
                participants[peer] = nil
            case .restarted(let peer, _):
                participants[peer] = nil
                // A new incarnation may run on a new clock epoch: start the estimate afresh.
                mesh.removePeer(peer)
                clocks[peer] = PeerClock(now: now, configuration: configuration)
                out += askHello(peer, now: now)
            case .forgotten(let peer):
                helloDue[peer] = nil
                clocks[peer] = nil
                mesh.removePeer(peer)
                participants[peer] = nil
            default:
                break
            }
        }
        return out
    }
}

extension NodeDirective {
    /// Changes after which local players may need telling.
    var affectsPlayers: Bool {
        switch self {
        case .groupChanged, .participantsChanged: return true
        case .membership(.stateChanged): return true
        default: return false
        }
    }
}

/// What a ``Node`` asks its shell to do.
public enum NodeDirective: Sendable, Equatable {
    /// Send a message. Clock requests and replies get their send time (t1, t3) from the shell.
    case send(PeerMessage, to: Endpoint)
    /// A membership change, for logs and watchers.
    case membership(Membership.Event)
    /// The group state changed: a record was applied (from this peer or another).
    case groupChanged(GroupChange)
    /// A peer's players changed.
    case participantsChanged
    /// Tell a local player something.
    case tellPlayer(UInt32, PlayerInstruction)
}
