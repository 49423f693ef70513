/// One agent's protocol logic: a thin router over one pure instance per protocol.
///
/// - ``Membership``: who the peers are, their paths, reachability, introductions (`hello`);
/// - ``PeerClocks``: clock exchanges, estimates, the mesh of gossiped estimates;
/// - ``Dissemination``: the replicated group state and every peer's players;
/// - ``Coordinator``: the players connected to this agent (SharePlay's semantics).
///
/// The node passes each input to the instance whose protocol it belongs to, hands each
/// instance what it needs of the others (routes, round trips, a ``GroupView``), turns their
/// directives into ``NodeDirective``s for the shell (peers by id become endpoints), and lets the
/// coordinator catch up whenever the group, the participants or reachability changed. It keeps
/// no protocol state of its own.
///
/// Every input is an `on…` call with the current local time (the agent's device clock: the
/// host's monotonic clock in production, a simulated one in tests); a value type with no I/O, so
/// several nodes with a simulated network between them make a deterministic, sleep-free
/// simulation of a whole group.
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
        public var clocks = PeerClocks.Configuration()
        public var replica = Replica.Configuration()
        public var coordinator = Coordinator.Configuration()
        public var paths = PathValidation.Configuration()

        public init() {}
    }

    public let identity: Identity
    public let configuration: Configuration
    public private(set) var membership: Membership
    public private(set) var clocks: PeerClocks
    public private(set) var group: Dissemination
    public private(set) var coordinator: Coordinator
    /// Players' sync errors exchanged on demand, for watchers.
    public private(set) var syncReports = SyncReports()
    /// Which source addresses have answered a challenge (the shell's ``ReplyBudget`` spares them).
    public private(set) var paths: PathValidation
    /// When the group clock last got every peer's estimate (``feedGroupClock(now:)``), and when
    /// an operation last arrived.
    private(set) var groupClockFedAt: LocalTime?
    private var operationArrivedAt: LocalTime?
    /// While operations arrive (one within ``groupClockActive``), the group clock gets the
    /// estimates on the timer every ``groupClockRefresh``, not on the way of each operation:
    /// resolving every peer's clock through the mesh was four fifths of handling an operation at
    /// 64 peers (docs/scale.md, twenty-fifth step). An arriving operation reads the group clock
    /// only for its stamp's sanity limit and its intake (milliseconds matter), and estimates are
    /// linear in time, so ones up to ``groupClockMaxAge`` old serve as well; older ones are
    /// refreshed first, and so are ones that would refuse the operation as stamped too far ahead
    /// (a peer whose clock is ahead may have become known since). An idle node resolves nothing
    /// for it. A command issued here always gets fresh ones: its instants are written on the
    /// basis's clock.
    static let groupClockRefresh: TimeSpan = .seconds(2)
    static let groupClockActive: TimeSpan = .seconds(60)
    static let groupClockMaxAge: TimeSpan = .seconds(15)

    public init(identity: Identity, configuration: Configuration = .init()) {
        self.identity = identity
        self.configuration = configuration
        self.membership = Membership(me: identity.peer, configuration: configuration.membership)
        self.clocks = PeerClocks(me: identity.peer, configuration: configuration.clocks)
        self.group = Dissemination(me: identity.peer, incarnation: identity.incarnation, configuration: configuration.replica)
        self.coordinator = Coordinator(me: identity.peer, configuration: configuration.coordinator)
        self.paths = PathValidation(configuration: configuration.paths)
    }

    // MARK: - Discovery

    /// DNS-SD saw `peer` (in our group) on an interface, with these addresses.
    public mutating func onSighting(_ peer: PeerID, name: String?, sighting: Membership.Sighting, endpoints: [Endpoint], now: LocalTime) -> [NodeDirective] {
        var out = route(membership.onSighting(peer, name: name, sighting: sighting, endpoints: endpoints, now: now), now: now)
        out += onTick(now: now)
        return out
    }

    /// DNS-SD withdrew a sighting.
    public mutating func onWithdrawal(_ sighting: Membership.Sighting, now: LocalTime) -> [NodeDirective] {
        var out = route(membership.onWithdrawal(sighting, now: now), now: now)
        out += onTick(now: now)
        return out
    }

    /// A peer to contact without discovery.
    public mutating func onStaticEndpoint(_ endpoint: Endpoint, now: LocalTime) -> [NodeDirective] {
        membership.onStaticEndpoint(endpoint)
        return onTick(now: now)
    }

    // MARK: - Datagrams

    /// An authenticated message from `sender` arrived from `source` at `receivedAt` (kernel time);
    /// `proven` if only the sender itself could seal it (pairwise, or under a session).
    public mutating func onMessage(
        _ message: PeerMessage, from sender: PeerID, incarnation: UInt64, proven: Bool = false, source: Endpoint, receivedAt: LocalTime, now: LocalTime
    ) -> [NodeDirective] {
        // Heard when handled, not when the kernel took it: an agent that fell seconds behind (a
        // starved machine) would otherwise lose every peer again as soon as a datagram made it
        // reachable, and the reachable-lost flapping, each time with a hello, digests and a clock
        // burst, is more work still. Behind, it errs towards alive.
        var out = route(membership.onHeard(sender, incarnation: incarnation, proven: proven, from: source, now: now), now: now)
        switch message {
        case .clockRequest(let exchange, let t1):
            // The reply goes before what meeting the peer brings (a digest, our own clock
            // request): to an address not validated yet the shell sends only a few times what
            // came from it, and the echo validates our address at the peer.
            let reply = run(clocks.onRequest(exchange: exchange, t1: t1, receivedAt: receivedAt, from: source, peer: sender))
            if out.isEmpty { out = reply } else { out.insert(contentsOf: reply, at: 0) }
        case .interleavedRequest(let exchange, let t1, let result):
            // The previous exchange's result first: it finishes the exchange before this one.
            if let result { out += run(clocks.onResult(from: sender, exchange: result.exchange, echo: result.echo, t1: result.t1, t4: result.t4, now: now)) }
            let reply = run(clocks.onRequest(exchange: exchange, t1: t1, receivedAt: receivedAt, from: source, peer: sender, interleaved: true))
            out.insert(contentsOf: reply, at: 0)
        case .clockReply(let exchange, let echo, let t2, let t3):
            onEchoed(echo, from: sender, source: source, receivedAt: receivedAt, now: now, into: &out)
            out += run(clocks.onReply(from: sender, exchange: exchange, echo: echo, t2: t2, t3: t3, receivedAt: receivedAt, source: source, now: now))
        case .interleavedReply(let exchange, let echo, let t2, let t3, let followUp):
            onEchoed(echo, from: sender, source: source, receivedAt: receivedAt, now: now, into: &out)
            out += run(clocks.onReply(
                from: sender, exchange: exchange, echo: echo, t2: t2, t3: t3, receivedAt: receivedAt, source: source, now: now, form: .interleaved(followUp)))
        case .clockFollowUp(let exchange, let echo, let t3):
            out += run(clocks.onFollowUp(from: sender, exchange: exchange, echo: echo, t3: t3))
        case .clockResult(let exchange, let echo, let t1, let t4):
            out += run(clocks.onResult(from: sender, exchange: exchange, echo: echo, t1: t1, t4: t4, now: now))
        case .clockReport where !proven, .goodbye where !proven:
            out.append(.dropped(.notProven, from: sender))
        case .clockReport(let report):
            let membership = membership
            let vouched = clocks.onReport(report, from: sender, route: membership.route(of: sender), incarnation: { membership.peers[$0]?.incarnation }, now: now)
            for entry in vouched { self.membership.onVouched(entry.peer, incarnation: entry.incarnation, now: now) }
        case .syncReport(let report):
            // Like participant records: only from peers membership holds, so the table stays bounded.
            guard membership.peers[sender] != nil else { break }
            syncReports.onReport(report, from: sender, now: now)
        case .hello(let name, let wantsReply):
            out += route(membership.onHello(sender, name: name), now: now)
            if wantsReply { out.append(.send(.hello(name: identity.name, wantsReply: false), to: source)) }
        case .goodbye:
            out += route(membership.onGoodbye(sender, now: now), now: now)
        case .peerAddresses(let entries):
            out += onPeerAddresses(entries, source: source, now: now)
        case .operation(let op, let wantsAck):
            operationArrivedAt = now
            if !feedGroupClock(now: now, ifOlderThan: Self.groupClockMaxAge), group.isStampedTooFarAhead(op, now: now) { feedGroupClock(now: now) }
            out += run(group.onOperation(op, wantsAck: wantsAck, from: sender, source: source, now: now), from: sender)
        case .itemRegister(let record):
            out += run(group.onRegister(record, from: sender), from: sender)
        case .currentRegister(let record):
            out += run(group.onRegister(record, from: sender), from: sender)
        case .checkpointVector(let entries, let fingerprint):
            out += run(group.onCheckpointVector(entries, fingerprint: fingerprint, from: sender), from: sender)
        case .ack(let id):
            group.onAck(id, from: sender, now: now)
        case .digest(let digest, let wantsReply):
            out += run(group.onDigest(digest, wantsReply: wantsReply, from: ReplicaID(peer: sender, incarnation: incarnation), source: source), from: sender)
        case .participantDigest(let participants, let after, let more, let wantsReply):
            let membership = membership
            out += run(group.onParticipantDigest(participants, after: after, more: more, wantsReply: wantsReply, from: sender, source: source, now: now, reachable: membership.isReachable), from: sender)
        case .participant(let record):
            // A sender membership refused (its table is full) leaves no record: tables stay bounded.
            guard membership.peers[sender] != nil else { break }
            let membership = membership
            out += run(group.onParticipant(record, from: sender, reachable: membership.isReachable), from: sender)
        case .intake(let intake):
            // Like a participant record: only from peers membership keeps.
            guard membership.peers[sender] != nil else { break }
            group.onIntake(intake, from: sender, now: now)
        case .epochKey, .keyAck, .memberKey, .sessionOffer, .sessionAnswer:
            // The group key's protocol lives with the keys, in the shell's wire module.
            break
        }
        // A peer met just now is greeted first (unless this was its hello): to an address that
        // has not answered a challenge the shell sends only a few times what came from it, and
        // the name matters most.
        // (Inserted only when there is one: `hellos + out` copied every datagram's directives.)
        let greetings = hellos(now: now)
        if !greetings.isEmpty { out.insert(contentsOf: greetings, at: 0) }
        out += peerAddressesDue(now: now)
        return settle(out, now: now)
    }

    /// A clock reply from `sender` at `source` echoed `echo`. The sender's address answered our
    /// challenge for the first time: until now what went to it was held to the shell's
    /// anti-amplification budget, and our hello may have been held back (or crossed the session
    /// being set up). Our name must not wait for a retry.
    private mutating func onEchoed(_ echo: Int64, from sender: PeerID, source: Endpoint, receivedAt: LocalTime, now: LocalTime, into out: inout [NodeDirective]) {
        let challenged = paths.isValidated(source, now: receivedAt)
        if paths.onEcho(echo, from: source, now: receivedAt), !challenged, !PathValidation.isVouched(source, by: membership),
            membership.onPathValidated(sender, now: now) {
            out.append(.send(.hello(name: identity.name, wantsReply: false), to: source))
        }
    }

    /// The shell sent clock request `exchange` (0: a probe) to `destination` carrying `t1`.
    public mutating func onClockRequestSent(exchange: UInt32, to destination: Endpoint, t1: LocalTime) {
        paths.onChallengeSent(to: destination, t1: t1)
        clocks.onRequestSent(exchange: exchange, to: destination, t1: t1)
    }

    /// The kernel says `message` (a clock request or reply, as sent) left for `destination` at
    /// `sentAt`. A request's time replaces its `t1` when the reply comes; a reply's goes to the
    /// requester in a follow-up, or, in interleaved form, with the reply to its next request.
    public mutating func onTransmitted(_ message: PeerMessage, to destination: Endpoint, at sentAt: LocalTime) -> [NodeDirective] {
        switch message {
        case .clockRequest(let exchange, let t1), .interleavedRequest(let exchange, let t1, _):
            clocks.onRequestTransmitted(exchange: exchange, t1: LocalTime(ours: t1), to: destination, at: sentAt)
            return []
        case .clockReply(let exchange, let echo, _, _), .interleavedReply(let exchange, let echo, _, _, _):
            return run(clocks.onReplyTransmitted(exchange: exchange, echo: echo, to: destination, at: sentAt))
        default:
            return []
        }
    }

    // MARK: - Time

    /// Time passes: lost peers, probes, introductions, clock exchanges, retransmissions,
    /// anti-entropy, waiting timelines.
    public mutating func onTick(now: LocalTime) -> [NodeDirective] {
        var out = route(membership.onTick(now: now), now: now)
        for endpoint in membership.dueProbes(now: now) {
            out.append(.sendClockRequest(exchange: 0, to: endpoint))
        }
        // No deadline of its own: with a peer reachable, its silence deadline ticks within seconds.
        if paths.isRevalidationDue(now: now) {
            let membership = membership
            let addresses = membership.reachable.compactMap { membership.endpoint(of: $0) }
            for endpoint in paths.dueRevalidations(of: addresses, isVouched: { PathValidation.isVouched($0, by: membership) }, now: now) {
                out.append(.sendClockRequest(exchange: 0, to: endpoint))
            }
        }
        out += hellos(now: now)
        out += peerAddressesDue(now: now)
        out += run(clocks.onTick(now: now, routes: membership.routes))
        let peers = membership.reachable
        let rtts = roundTrips(now: now)
        out += run(group.onTick(now: now, peers: peers, rtt: { rtts[$0] }), from: nil)
        out += syncReportsDue(now: now)
        if let arrived = operationArrivedAt, now >= arrived, now - arrived < Self.groupClockActive {
            feedGroupClock(now: now, ifOlderThan: Self.groupClockRefresh)
        }
        return settle(out, now: now, always: true)
    }

    /// When ``onTick(now:)`` next has work.
    public func nextDeadline(now: LocalTime) -> LocalTime {
        let reachable = membership.reachableSet
        return deadline(
            now: now, membership: membership.nextDeadline(now: now),
            clocks: clocks.nextDeadline(now: now, isReachable: { reachable.contains($0) })
        )
    }

    /// ``nextDeadline(now:)`` or a little earlier (a tick then finds nothing due), with the
    /// clocks' part read in place (``PeerClocks/nextWakeup(now:isReachable:)``) and membership's
    /// worked out only for the peers that changed (``Membership/nextWakeup(now:)``): what the
    /// shell's timer asks after every event.
    public mutating func nextWakeup(now: LocalTime) -> LocalTime {
        // Worked out before the call: as its argument the clocks' part would mutate the node
        // the call reads, and the node was copied whole for it.
        let membershipNext = membership.nextWakeup(now: now)
        let reachable = membership.reachableSet
        let clocksNext = clocks.nextWakeup(now: now, isReachable: { reachable.contains($0) })
        return deadline(now: now, membership: membershipNext, clocks: clocksNext)
    }

    private func deadline(now: LocalTime, membership membershipNext: LocalTime, clocks clocksNext: LocalTime) -> LocalTime {
        var next = min(membershipNext, clocksNext)
        next = min(next, group.nextDeadline(now: now))
        next = min(next, syncReports.nextDeadline(now: now))
        // Only a waiting record has a coordinator deadline (its wait timeout); the view is not free.
        if group.state.items.values.contains(where: { $0.timeline.phase == .waiting }) {
            next = min(next, coordinator.nextDeadline(view: view, now: now))
        }
        return max(next, now)
    }

    /// The local clock stepped (a test hook simulates this; a monotonic clock never does). Every
    /// time kept on the old scale is now meaningless: clock estimates start afresh with a burst,
    /// peers count as just heard, and retransmissions and reports are due at once. Records this
    /// node issued before the step keep their anchors (they are on the old scale) until superseded.
    public mutating func onLocalClockStep(now: LocalTime) -> [NodeDirective] {
        groupClockFedAt = nil
        operationArrivedAt = nil
        membership.onLocalClockStep(now: now)
        clocks.onLocalClockStep(now: now)
        group.onLocalClockStep(now: now)
        return onTick(now: now)
    }

    /// The shell stepped the local clock back after a ``NodeDirective/ownClockStepped(by:)``: the
    /// clock estimates hold again (exchanges restart with a burst), and times kept during the
    /// step (peers heard, retransmissions due) are rewritten as now.
    public mutating func onLocalClockCorrected(now: LocalTime) -> [NodeDirective] {
        groupClockFedAt = nil
        operationArrivedAt = nil
        membership.onLocalClockStep(now: now)
        clocks.onLocalClockCorrected(now: now)
        group.onLocalClockStep(now: now)
        return onTick(now: now)
    }

    /// The group's devices now (the roster, removed ones excluded), as the keys know them.
    public mutating func onRoster(_ devices: Set<PeerID>) {
        group.onRoster(devices)
    }

    /// What to send before shutting down: a goodbye to every reachable peer.
    public func onShutdown() -> [NodeDirective] {
        membership.reachable.compactMap { peer in membership.endpoint(of: peer).map { .send(.goodbye, to: $0) } }
    }

    /// Whether this agent's clients watch players' sync errors (then it asks its peers for theirs).
    public mutating func onSyncReportsWanted(_ wanted: Bool, now: LocalTime) -> [NodeDirective] {
        syncReports.onWanted(wanted, now: now)
        return syncReportsDue(now: now)
    }

    // MARK: - Players and commands

    /// A player said hello (`info` within ``Limits``).
    public mutating func onPlayerHello(id: UInt32, info: PlayerSession.Info, now: LocalTime) -> [NodeDirective] {
        settle(run(coordinator.onPlayerHello(id: id, info: info), now: now), now: now)
    }

    /// A player disconnected.
    public mutating func onPlayerGone(id: UInt32, now: LocalTime) -> [NodeDirective] {
        settle(run(coordinator.onPlayerGone(id: id), now: now), now: now, always: true)
    }

    /// The player loaded `item`, with the group or alone (`solo`).
    public mutating func onPlayerLoad(id: UInt32, item: ItemID, metadata: ItemMetadata, solo: Bool, now: LocalTime) -> [NodeDirective] {
        let d = coordinator.onPlayerLoad(id: id, item: item, metadata: metadata, solo: solo, view: view, now: now)
        return settle(run(d, now: now), now: now, always: true)
    }

    /// The player loads what the group plays.
    public mutating func onPlayerJoinGroup(id: UInt32, now: LocalTime) -> [NodeDirective] {
        let d = coordinator.onPlayerJoinGroup(id: id, view: view, now: now)
        return settle(run(d, now: now), now: now, always: true)
    }

    /// The player left its item.
    public mutating func onPlayerUnload(id: UInt32, now: LocalTime) -> [NodeDirective] {
        settle(run(coordinator.onPlayerUnload(id: id), now: now), now: now, always: true)
    }

    /// The player is ready, or not.
    public mutating func onPlayerReadiness(id: UInt32, _ readiness: PlayerStatus.Readiness, now: LocalTime) -> [NodeDirective] {
        settle(run(coordinator.onPlayerReadiness(id: id, readiness), now: now), now: now, always: true)
    }

    /// The player's start latency changed.
    public mutating func onPlayerStartLatency(id: UInt32, _ latency: TimeSpan, now: LocalTime) -> [NodeDirective] {
        settle(run(coordinator.onPlayerStartLatency(id: id, latency), now: now), now: now, always: true)
    }

    /// A transport intent from the player's own UI.
    public mutating func onPlayerIntent(id: UInt32, _ command: GroupCommand, now: LocalTime) -> [NodeDirective] {
        let d = coordinator.onPlayerIntent(id: id, command, view: view, now: now)
        return settle(run(d, now: now), now: now, always: true)
    }

    /// The player starts without waiting for the others.
    public mutating func onPlayerPlayImmediately(id: UInt32, rate: Double?, now: LocalTime) -> [NodeDirective] {
        let d = coordinator.onPlayerPlayImmediately(id: id, rate: rate, view: view, now: now)
        return settle(run(d, now: now), now: now, always: true)
    }

    /// The player reports where it was at `at`.
    public mutating func onPlayerPosition(id: UInt32, position: MediaPosition, at: LocalTime, now: LocalTime) -> [NodeDirective] {
        run(coordinator.onPlayerPosition(id: id, position: position, at: at, view: view, now: now), now: now)
    }

    /// The player leaves group playback for a while.
    public mutating func onPlayerBeginSuspension(id: UInt32, reason: SuspensionReason, now: LocalTime) -> [NodeDirective] {
        settle(run(coordinator.onPlayerBeginSuspension(id: id, reason: reason), now: now), now: now, always: true)
    }

    /// The player ends a suspension (its latest when `suspension` is nil), perhaps moving the group.
    public mutating func onPlayerEndSuspension(id: UInt32, suspension: UInt32?, proposedPosition: MediaPosition?, now: LocalTime) -> [NodeDirective] {
        let d = coordinator.onPlayerEndSuspension(id: id, suspension: suspension, proposedPosition: proposedPosition, view: view, now: now)
        return settle(run(d, now: now), now: now, always: true)
    }

    /// A command for the group (the CLI's), for `item` (default: the group's item).
    public mutating func onCommand(_ command: GroupCommand, item: ItemID? = nil, now: LocalTime) -> [NodeDirective] {
        let d = coordinator.onCommand(command, item: item, reason: nil, view: view, now: now)
        return settle(run(d, now: now), now: now, always: true)
    }

    // MARK: - Queries

    /// The group as the coordinator sees it now.
    public var view: GroupView {
        GroupView(
            me: identity.peer, state: group.state, participants: group.participants, reachable: membership.reachableSet, timelines: timelines,
            ackDelays: group.ackDelays,
            presenceVersion: .init(participants: group.participantsVersion, reachable: membership.reachabilityVersion))
    }

    /// Whether `endpoint` is known to be where a peer is: discovery gave it, or it answered a
    /// clock request sent to it. What goes elsewhere is kept within a ``ReplyBudget``.
    ///
    /// `onceHeard`: whether it will still be once a datagram from it is handled, which is what
    /// decides whether that datagram earns credit in the budget. An address vouched for only by
    /// a member's introduction is not: the datagram that makes its peer heard ends the vouching,
    /// and the answers to that very datagram (our hello, the reply to its probe) are then held
    /// to the budget. Uncredited, two introduced peers whose probes crossed refused each other
    /// everything until DNS-SD resolved one of them, seconds later.
    public func isValidated(_ endpoint: Endpoint, now: LocalTime, onceHeard: Bool = false) -> Bool {
        paths.isValidated(endpoint, now: now) || PathValidation.isVouched(endpoint, by: membership, onceHeard: onceHeard)
    }

    /// The group's timelines on this node's clock.
    public var timelines: LocalTimelines {
        LocalTimelines(me: identity.peer, clocks: clocks)
    }

    /// How far ahead a command for `item` is anchored now.
    public func leadTime(for item: ItemID?, now: LocalTime) -> TimeSpan {
        coordinator.leadTime(for: item, view: view, now: now)
    }

    // MARK: - Routing

    /// Membership events: the other instances learn of peers coming, going and restarting.
    private mutating func route(_ events: [Membership.Event], now: LocalTime) -> [NodeDirective] {
        var out: [NodeDirective] = []
        if !events.isEmpty { syncMembers() }
        for event in events {
            out.append(.membership(event))
            switch event {
            case .stateChanged(let peer, _, .reachable):
                clocks.onPeerReachable(peer, now: now)
                out += run(group.onPeerReachable(peer, now: now), from: nil)
            case .stateChanged(let peer, _, .lost):
                group.onPeerLost(peer)
                syncReports.onPeerGone(peer)
            case .restarted(let peer, _):
                group.onPeerGone(peer, now: now)
                clocks.onPeerRestarted(peer, now: now)
                syncReports.onPeerGone(peer)
            case .forgotten(let peer):
                group.onPeerForgotten(peer)
                clocks.onPeerForgotten(peer)
                syncReports.onPeerGone(peer)
            case .stateChanged, .renamed, .refused:
                break
            }
        }
        if !events.isEmpty { syncIndirect(now: now) }
        return out
    }

    /// Membership learns which peers the clock mesh reaches only in two hops: their liveness
    /// comes from the reports of the peers that measure them.
    private mutating func syncIndirect(now: LocalTime) {
        let indirect = clocks.known.subtracting(clocks.measured)
        if indirect != membership.indirect { membership.onIndirect(indirect, now: now) }
    }

    /// The group's members for replication: every known peer's current incarnation (a peer
    /// stays one while lost, until membership forgets it).
    private mutating func syncMembers() {
        group.onMembers(Set(membership.peers.values.compactMap { p in p.incarnation.map { ReplicaID(peer: p.id, incarnation: $0) } }))
    }

    /// ``feedGroupClock(now:)`` unless the group clock got its estimates less than `age` ago;
    /// whether it did.
    @discardableResult
    private mutating func feedGroupClock(now: LocalTime, ifOlderThan age: TimeSpan) -> Bool {
        guard groupClockFedAt.map({ now < $0 || now - $0 >= age }) ?? true else { return false }
        feedGroupClock(now: now)
        return true
    }

    /// The group clock reads the latest estimate of every known peer's clock.
    private mutating func feedGroupClock(now: LocalTime) {
        groupClockFedAt = now
        group.onClockEstimates(membership.peers.keys.sorted().compactMap { peer in clocks.resolved(peer, at: now).map { (peer, $0.estimate) } })
    }

    /// Sync reports due now, to peers by endpoint.
    private mutating func syncReportsDue(now: LocalTime) -> [NodeDirective] {
        let local = coordinator.syncErrors(now: now, within: syncReports.configuration.freshness)
        return syncReports.onTick(now: now, reachable: membership.reachable, local: local).compactMap { d in
            switch d {
            case .send(let report, let peer): membership.endpoint(of: peer).map { .send(.syncReport(report), to: $0) }
            }
        }
    }

    /// `peer_addresses` due (peer protocol §4.4a): peers met for the first time or restarted
    /// (``Membership/addressesOwed``) learn where this node reaches its other peers, once their
    /// address is validated; one that is no longer reachable is owed nothing.
    private mutating func peerAddressesDue(now: LocalTime) -> [NodeDirective] {
        guard !membership.addressesOwed.isEmpty else { return [] }
        var out: [NodeDirective] = []
        for peer in membership.addressesOwed.sorted() {
            guard membership.isReachable(peer), let to = membership.endpoint(of: peer) else {
                membership.onAddressesSent(to: peer)
                continue
            }
            guard isValidated(to, now: now) else {
                // Held until the address answers a challenge: ask it now, and again each second.
                if paths.shouldChallenge(to, every: .seconds(1), now: now) { out.append(.sendClockRequest(exchange: 0, to: to)) }
                continue
            }
            membership.onAddressesSent(to: peer)
            out += peerAddresses(for: peer, at: to)
        }
        return out
    }

    /// Where this node reaches its other reachable peers, for `peer` at `to`. Loopback addresses
    /// go only to a peer reached over loopback (the same host).
    private func peerAddresses(for peer: PeerID, at to: Endpoint) -> [NodeDirective] {
        let entries: [PeerAddress] = membership.reachable.compactMap { other in
            guard other != peer, let e = membership.endpoint(of: other), PeerAddress.isPassable(e), e.isLoopback == to.isLoopback else { return nil }
            return PeerAddress(peer: other, endpoint: e)
        }
        return entries.parts(of: PeerMessage.maxPeerAddresses).map { .send(.peerAddresses($0), to: to) }
    }

    /// A peer's `peer_addresses`: the peers this node has no path to yet are probed at the
    /// addresses it gives (``Membership/onIntroduced(_:at:now:)``). A loopback address counts only
    /// from a peer on this host (it names this host's own loopback).
    private mutating func onPeerAddresses(_ entries: [PeerAddress], source: Endpoint, now: LocalTime) -> [NodeDirective] {
        var out: [NodeDirective] = []
        for entry in entries where entry.endpoint.isLoopback == source.isLoopback {
            let (events, probe) = membership.onIntroduced(entry.peer, at: entry.endpoint, now: now)
            out += route(events, now: now)
            if let probe { out.append(.sendClockRequest(exchange: 0, to: probe)) }
        }
        return out
    }

    /// Introductions due: our hello, asking for theirs.
    private mutating func hellos(now: LocalTime) -> [NodeDirective] {
        membership.dueHellos(now: now).compactMap { peer in
            membership.endpoint(of: peer).map { .send(.hello(name: identity.name, wantsReply: true), to: $0) }
        }
    }

    // The two `run`s below change nothing, yet are `mutating`: their callers pass what a
    // mutating call on one of the node's parts returns (`run(clocks.onTick(…))`). Borrowing the
    // node for a non-mutating call across that mutation made Swift copy the whole node first,
    // and then every collection the part mutated was copied too (`perf` of an idle agent: the
    // clock links' dictionary, once per tick and per datagram).
    private mutating func run(_ directives: [PeerClocks.Directive]) -> [NodeDirective] {
        directives.compactMap { d in
            switch d {
            case .sendRequest(let exchange, let to, let form): return .sendClockRequest(exchange: exchange, to: to, form: form)
            case .sendReply(let exchange, let echo, let t2, let to, let form): return .sendClockReply(exchange: exchange, echo: echo, t2: t2, to: to, form: form)
            case .sendFollowUp(let exchange, let echo, let t3, let to): return .send(.clockFollowUp(exchange: exchange, echo: echo, t3: PeerTime(ours: t3)), to: to)
            case .sendResult(let exchange, let echo, let t1, let t4, let to):
                return .send(.clockResult(exchange: exchange, echo: echo, t1: PeerTime(ours: t1), t4: PeerTime(ours: t4)), to: to)
            case .sendReport(let report, let peer): return membership.endpoint(of: peer).map { .send(.clockReport(report), to: $0) }
            case .refusedReply(let peer): return .dropped(.wrongEcho, from: peer)
            case .ownClockStepped(let by): return .ownClockStepped(by: by)
            }
        }
    }

    private mutating func run(_ directives: [Dissemination.Directive], from sender: PeerID?) -> [NodeDirective] {
        directives.flatMap { d -> [NodeDirective] in
            switch d {
            case .changed(let change):
                let told = change.concurrent.map { coordinator.onConcurrentCommands($0) } ?? []
                return [.groupChanged(change)] + told.compactMap { if case .tell(let id, let i) = $0 { .tellPlayer(id, i) } else { nil } }
            default:
                return runOne(d, from: sender).map { [$0] } ?? []
            }
        }
    }

    private func runOne(_ d: Dissemination.Directive, from sender: PeerID?) -> NodeDirective? {
        switch d {
        case .send(let message, let peer): return membership.endpoint(of: peer).map { .send(message, to: $0) }
        case .reply(let message, let endpoint): return .send(message, to: endpoint)
        case .changed(let change): return .groupChanged(change)
        case .participantsChanged: return .participantsChanged
        case .refused(let refusal):
            guard let sender else { return nil }
            switch refusal {
            case .operation(.stampTooFarAhead): return .dropped(.stampTooFarAhead, from: sender)
            case .operation(.invalidHeads): return .dropped(.invalidHeads, from: sender)
            case .operation(.retired): return .dropped(.retiredReplica, from: sender)
            case .speaksForUs: return .dropped(.speaksForUs, from: sender)
            case .checkpointIncomplete: return .dropped(.checkpointIncomplete, from: sender)
            }
        }
    }

    private mutating func run(_ directives: [Coordinator.Directive], now: LocalTime) -> [NodeDirective] {
        var out: [NodeDirective] = []
        for d in directives {
            switch d {
            case .tell(let id, let instruction):
                out.append(.tellPlayer(id, instruction))
            case .reply(let outcome):
                out.append(.reply(outcome))
            case .publish(let players):
                out += run(group.onLocalPlayers(players, peers: membership.reachable), from: nil)
            case .propose(let proposal):
                let rtts = roundTrips(now: now)
                feedGroupClock(now: now)
                out += run(group.onProposal(proposal, now: now, peers: membership.reachable, rtt: { rtts[$0] }), from: nil)
            }
        }
        return out
    }

    /// Lets the coordinator catch up after changes that matter to players (`always`: whatever
    /// happened), until it proposes nothing more (starting a waiting timeline changes the state
    /// it reads; a few rounds settle it). The reply to the request, if any, goes first.
    private mutating func settle(_ directives: [NodeDirective], now: LocalTime, always: Bool = false) -> [NodeDirective] {
        var out = directives
        var pending = always || directives.contains(where: \.affectsPlayers)
        var rounds = 0
        while pending && rounds < 4 {
            rounds += 1
            let more = run(coordinator.onGroupChanged(view: view, now: now), now: now)
            out += more
            pending = more.contains(where: \.affectsPlayers)
        }
        let replies = out.filter { if case .reply = $0 { true } else { false } }
        return replies.isEmpty ? out : replies + out.filter { if case .reply = $0 { false } else { true } }
    }

    /// Best round trip to each measured peer.
    private func roundTrips(now: LocalTime) -> [PeerID: TimeSpan] {
        var out: [PeerID: TimeSpan] = [:]
        for peer in clocks.links.keys {
            if let rtt = clocks.roundTrip(to: peer, at: now) { out[peer] = rtt }
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
