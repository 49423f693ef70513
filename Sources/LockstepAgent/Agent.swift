#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LockstepCore
import LockstepPeerWire
import LockstepPlayerProtocol
import Logging
import NIOCore

/// The agent: the shell around Lockstep's pure core (``Node``) and the group key's protocol
/// (``KeyRotation``). It turns datagrams, discovery events, player requests and the passing of
/// time into their inputs, and carries out their directives: sending datagrams, telling players.
///
/// Runs on one thread of its own, ``AgentLoop``: the actor's executor, which also reads the peer
/// socket and keeps the timer, so that a datagram is handled with one wake-up. Time comes from
/// one injected ``HostClock``, read once per event; the one timer, set for the earliest deadline
/// of the node, the key rotation, pairing, sessions and measurements, steps them all. With
/// ``Clock/manual(_:)`` the agent schedules no timer: a test moves the clock and calls
/// ``tick()``, and nothing sleeps. Once stopped, it sets none either, so nothing keeps it alive.
public actor Agent: ClientHandler {
    /// Who this agent is, fixed for the life of the process.
    public struct Identity: Sendable {
        /// The device key; the peer id derives from it.
        public var device: DeviceIdentity
        public var name: String
        public var incarnation: UInt64
        public var group: GroupIdentity
        public var peerID: PeerID { device.peerID }

        public init(device: DeviceIdentity, name: String, incarnation: UInt64, group: GroupIdentity) {
            self.device = device
            self.name = name
            self.incarnation = incarnation
            self.group = group
        }
    }

    /// Where the agent's time comes from.
    public enum Clock: Sendable {
        /// The machine's `CLOCK_MONOTONIC`, with the one timer on the event loop.
        case system
        /// A clock that moves only when a test moves it; no timer (call ``Agent/tick()``).
        case manual(ManualClock)

        var host: any HostClock {
            switch self {
            case .system: MonotonicClock()
            case .manual(let clock): clock
            }
        }
    }

    /// Whether mDNS discovery runs, for `status`.
    enum DiscoveryState: CustomStringConvertible {
        case off, starting, running
        case unavailable(String)

        var description: String {
            switch self {
            case .off: "off"
            case .starting: "starting"
            case .running: "running"
            case .unavailable(let reason): "unavailable: \(reason)"
            }
        }
    }

    nonisolated let loop: AgentLoop
    public nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    let configuration: AgentConfiguration
    let identity: Identity
    let logger: Logger
    let hostClock: any HostClock
    let timerEnabled: Bool
    let startedAt: Int64
    /// The device clock (the host's monotonic clock unless a test simulates another).
    let clockSource: DeviceClockSource
    var deviceClock: DeviceClock { clockSource.current }
    var node: Node
    var keys: GroupMembers
    var pairing = Pairing()
    var sessions: PairSessions
    /// The session key to seal under, per peer (from ``PairSessions``' installs).
    var sessionSeal: [PeerID: GroupKey] = [:]
    /// Devices whose DNS-SD record shows an open invite (any group), by instance: where a
    /// joining agent tries its code. Bounded: a stranger's fake services cannot grow it.
    var inviters: [String: [Endpoint]] = [:]
    /// The `group_join` request waiting for pairing to end.
    var pendingJoin: Request?
    /// The DNS-SD instance name this agent registered (avahi may rename it).
    var registeredInstance: String?
    /// Our own DNS-SD instance as browsed back, on `lo` and each LAN interface (by the name
    /// asked for until avahi confirms one). Those named ``registeredInstance`` are settled like
    /// a reachable peer's (``settleDiscovery(now:)``).
    var ownInstances: Set<Membership.Sighting> = []
    /// What ``settleDiscovery(now:)`` last told discovery, and when it last looked.
    var settledInstances: Set<Membership.Sighting> = []
    /// The instance names last given to discovery not to resolve (``sparedInstanceNames(peers:measured:ownName:)``).
    var sparedNames: Set<String> = []
    var settleCheckedAt: LocalTime?
    /// Configured peers' endpoints (`--peer`), also where a joining agent tries its code.
    var staticEndpoints: [Endpoint] = []
    /// What may still go to each address that is not validated (``Agent/mayTransmit(_:to:now:)``).
    var replyBudget = ReplyBudget()
    var transport: PeerTransport?
    var discovery: DNSSDDiscovery?
    var discoveryState = DiscoveryState.off
    var timer: AgentLoop.Timer?
    var timerDeadline = LocalTime.distantFuture
    /// When the agent next lets go of pages it no longer uses (``scheduleTrim(after:)``).
    var trimTimer: AgentLoop.Timer?
    /// The socket is being read: ``rearm(_:)`` waits for the end of it.
    var draining = false
    /// ``stop()`` ran: no timer is set again (its closure would hold the agent).
    var stopped = false
    /// Measurements (topics `clock` and `sync`) pushed to subscribers, about once a second.
    var measurements = MeasurementPush()
    var tasks: [Task<Void, Never>] = []
    var clients: [UInt64: ClientState] = [:]
    var nextPlayerID: UInt32 = 1
    /// The day whose group tag our TXT record shows (``publishTXT()``; the tag is new every day).
    var tagDay = GroupKey.tagDayNow()
    /// Yields once this agent's device key was replaced (`group_reset_identity`): the daemon
    /// stops it and starts an agent under the new key, in the same process.
    public nonisolated let identityReset: AsyncStream<Void>
    nonisolated let identityResetContinuation: AsyncStream<Void>.Continuation

    /// What the agent knows about one connected client.
    struct ClientState {
        let connection: ClientConnection
        var hello: HelloRequest?
        var playerID: UInt32?
        /// Event topics the client subscribed to.
        var topics: Set<Topic> = []
    }

    public init(configuration: AgentConfiguration, identity: Identity, logger: Logger, clock: Clock = .system) {
        self.configuration = configuration
        self.identity = identity
        self.loop = AgentLoop()
        self.logger = logger
        self.hostClock = clock.host
        if case .manual = clock { self.timerEnabled = false } else { self.timerEnabled = true }
        self.startedAt = clock.host.now()
        self.clockSource = DeviceClockSource(configuration.deviceClock)
        self.node = Self.makeNode(configuration: configuration, identity: identity)
        self.keys = GroupMembers(group: identity.group, me: identity.device)
        self.sessions = PairSessions(me: identity.peerID)
        (self.identityReset, self.identityResetContinuation) = AsyncStream.makeStream(of: Void.self)
    }

    /// A node with nothing replicated yet: at start, and after a group switch.
    static func makeNode(configuration: AgentConfiguration, identity: Identity) -> Node {
        var nodeConfig = Node.Configuration()
        nodeConfig.membership.lostAfter = configuration.peerTimeout
        nodeConfig.clocks.neighbours = ClockNeighbours(denseUpTo: configuration.fullMeshUpTo)
        // Replies are how a peer is heard: three exchanges within the peer timeout, however steady.
        let exchanges = nodeConfig.clocks.exchanges
        nodeConfig.clocks.exchanges.maxInterval = max(exchanges.minInterval, min(exchanges.maxInterval, configuration.peerTimeout / Int64(3)))
        nodeConfig.coordinator.waitingReasons = Set(configuration.waitingReasons.map(SuspensionReason.init(text:)))
        nodeConfig.coordinator.waitTimeout = configuration.waitTimeout
        return Node(identity: .init(peer: identity.peerID, incarnation: identity.incarnation, name: identity.name), configuration: nodeConfig)
    }

    /// The node's local clock now: the device clock (the host's monotonic clock unless simulated).
    func now() -> LocalTime {
        deviceClock.device(fromHost: hostClock.now())
    }

    /// Host time (`CLOCK_MONOTONIC`, what players speak) of a local time.
    func hostTime(_ local: LocalTime) -> Int64 { deviceClock.host(fromDevice: local) }
    /// Local time of a host time.
    func localTime(_ host: Int64) -> LocalTime { deviceClock.device(fromHost: host) }
    /// A rate in media ns per local ns, as media ns per host ns (they differ only when a test
    /// simulates a device clock with a skew).
    func hostRate(_ rate: Double) -> Double { rate * (1 + deviceClock.skewPPM * 1e-6) }

    // MARK: - Lifecycle

    /// Opens the peer socket and starts discovery. Throws if the UDP port cannot be bound.
    public func start() throws {
        let socket = try PeerSocket(port: configuration.udpPort)
        let transport = PeerTransport(
            socket: socket,
            sealer: EnvelopeSealer(sender: identity.peerID, incarnation: identity.incarnation, key: keys.group.currentKey),
            opener: EnvelopeOpener(me: identity.peerID, incarnation: identity.incarnation, keys: []),
            clock: clockSource, hostClock: hostClock, impairments: configuration.impairments, logger: logger)
        self.transport = transport
        execute(keys.onStart(name: identity.name, now: now()))
        logger.info("peer socket open", metadata: ["udp.port": "\(socket.port)"])
        if !configuration.deviceClock.isIdentity {
            logger.notice("simulating a device clock on the wire (test hook)", metadata: [
                "clock.offset_ns": "\(configuration.deviceClock.offsetNs)", "clock.skew_ppm": "\(configuration.deviceClock.skewPPM)",
            ])
        }
        if !configuration.impairments.isNone {
            logger.notice("impairing outgoing datagrams (test hook)", metadata: ["impair.all": "\(configuration.impairments.all)"])
        }
        loop.watch(socket.descriptor) { [self] in
            assumeIsolated { agent in
                // One re-arm for all the socket held: replies to a batch of requests come together.
                agent.draining = true
                defer {
                    agent.draining = false
                    agent.rearm(agent.now())
                }
                transport.drain { event in
                    switch event {
                    case .inbound(let datagram): agent.onInbound(datagram)
                    case .transmitted(let sent): agent.onTransmitted(sent)
                    case .undecryptable(let sender, let epochByte, let source): agent.onUndecryptable(sender, epochByte: epochByte, source: source)
                    case .pairing(let message, let source): agent.onPairing(message, from: source)
                    }
                }
            }
        }
        let now = now()
        for text in configuration.staticPeers { addStaticPeer(text, now: now) }
        if configuration.mdns { startDiscovery(port: socket.port) }
        step(now)
        scheduleTrim(after: ResidentPages.firstTrim)
    }

    /// Says goodbye to the peers and closes everything.
    public func stop() {
        if let transport {
            for case .send(let message, let endpoint) in node.onShutdown() { transport.send(message, to: endpoint) }
        }
        execute(keys.onStop())
        stopped = true
        if let timer { loop.cancel(timer) }
        timer = nil
        if let trimTimer { loop.cancel(trimTimer) }
        trimTimer = nil
        discovery?.stop()
        loop.unwatch()
        transport?.stop()
        for t in tasks { t.cancel() }
        tasks = []
    }

    // MARK: - Events

    func onInbound(_ d: PeerTransport.Inbound) {
        let now = now()
        let (accepted, directives) = keys.onDatagram(from: d.sender, source: d.source, epochByte: d.epochByte, now: now)
        execute(directives)
        guard accepted else { return }
        credit(d, now: now)
        let pairKey = keys.pairKeys[d.sender]
        let pairwise = d.epochByte == GroupKey.pairEpochByte
        execute(sessions.onHeard(d.sender, incarnation: d.incarnation, sessionKey: d.sessionKey, pairKey: pairKey, now: now))
        switch d.message {
        case .sessionOffer(let e):
            execute(sessions.onOffer(e, from: d.sender, incarnation: d.incarnation, pairwise: pairwise, pairKey: pairKey, now: now))
        case .sessionAnswer(let e, let offer):
            execute(sessions.onAnswer(e, offer: offer, from: d.sender, pairwise: pairwise, pairKey: pairKey, now: now))
        case .epochKey(let epoch, let key, let removed):
            execute(keys.onEpochKey(epoch: epoch, key: key, removed: removed, from: d.sender, pairwise: d.epochByte == GroupKey.pairEpochByte, now: now))
        case .keyAck(let epoch):
            keys.onKeyAck(epoch: epoch, from: d.sender)
        case .memberKey(let key, let name):
            execute(keys.onMemberKey(key, name: name, from: d.sender, epochByte: d.epochByte, now: now))
        default:
            let proven = d.epochByte == GroupKey.sessionEpochByte || d.epochByte == GroupKey.pairEpochByte
            if !proven, sessions.isConfirmed(d.sender), node.membership.peers[d.sender]?.provenIncarnation == d.incarnation {
                // That start of the member seals to this device under their session: the group key
                // with its id is another member speaking for it (review finding M4), or the member
                // lost the session; the offerer offers again (at most once a retry interval).
                transport?.drop("group_key_from_session_peer", "refused a group-key datagram with the id of a member in session", from: d.source)
                execute(sessions.onUndecryptable(d.sender, pairKey: pairKey, now: now))
                break
            }
            execute(node.onMessage(d.message, from: d.sender, incarnation: d.incarnation, proven: proven, source: d.source, receivedAt: d.receivedAt, now: now), now: now)
            if case .goodbye = d.message, proven { transport?.opener.departed(d.sender, incarnation: d.incarnation) }
        }
        rearm(now)
    }

    func onUndecryptable(_ sender: PeerID, epochByte: UInt8, source: Endpoint) {
        let now = now()
        execute(keys.onUndecryptable(from: sender, epochByte: epochByte, source: source, now: now))
        if epochByte == GroupKey.sessionEpochByte { execute(sessions.onUndecryptable(sender, pairKey: keys.pairKeys[sender], now: now)) }
        rearm(now)
    }

    func onTransmitted(_ t: PeerTransport.Transmitted) {
        let now = now()
        execute(node.onTransmitted(t.message, to: t.destination, at: t.sentAt), now: now)
        rearm(now)
    }

    /// Runs the timer's work now: for tests on a ``Clock/manual(_:)`` clock, after moving it.
    public func tick() {
        step(now())
    }

    /// Runs the node's and the key rotation's timer work and re-arms the one timer.
    func step(_ now: LocalTime) {
        execute(node.onTick(now: now), now: now)
        execute(keys.onTick(now: now, reachable: node.membership.reachable))
        if pairing.isJoining { execute(pairing.onCandidates(pairingCandidates(), now: now)) }
        execute(sessions.onTick(now: now, reachable: Set(node.membership.reachable)))
        execute(pairing.onTick(now: now))
        if measurements.isDue(now) { pushMeasurements(now: now) }
        if discovery != nil, GroupKey.tagDayNow() != tagDay { publishTXT() }
        if settleCheckedAt.map({ now - $0 >= .seconds(1) }) ?? true { settleDiscovery(now: now) }
        rearm(now)
    }

    /// Re-arms the one timer for the earliest deadline of the node and the key rotation.
    func rearm(_ now: LocalTime) {
        guard timerEnabled, !stopped, !draining else { return }
        var deadline = inPlace(&node) { $0.nextWakeup(now: now) }
        if let k = keys.nextDeadline { deadline = min(deadline, max(k, now)) }
        if let p = pairing.nextDeadline { deadline = min(deadline, max(p, now)) }
        if let m = measurements.nextDue { deadline = min(deadline, max(m, now)) }
        if let s = sessions.nextDeadline { deadline = min(deadline, max(s, now)) }
        // Moved later too: a deadline that went away (most often the wait for a peer's
        // follow-up, which came within a millisecond) would otherwise wake the agent for nothing,
        // a third of an idle agent's timer wake-ups.
        if timer != nil && deadline == timerDeadline { return }
        if let timer { loop.cancel(timer) }
        timerDeadline = deadline
        timer = loop.schedule(at: hostTime(deadline)) { [self] in
            assumeIsolated { agent in
                agent.timer = nil
                agent.timerDeadline = .distantFuture
                agent.step(agent.now())
            }
        }
    }

    /// Carries out the node's directives. A `reply` goes to `reply` (the request being handled).
    ///
    /// Consecutive sends leave together (``PeerTransport/send(_:)``), before the next
    /// directive of another kind: a command to the whole group is one system call, not one a peer.
    func execute(_ directives: [NodeDirective], now: LocalTime, reply: ((RequestOutcome) -> Void)? = nil) {
        var sends: [(message: PeerMessage, to: Endpoint)] = []
        defer { if !sends.isEmpty { transport?.send(sends) } }
        for directive in directives {
            if case .send(let message, let endpoint) = directive {
                if mayTransmit(message, to: endpoint, now: now) { sends.append((message, endpoint)) }
                continue
            }
            if !sends.isEmpty {
                transport?.send(sends)
                sends.removeAll(keepingCapacity: true)
            }
            switch directive {
            case .send:
                break
            case .sendClockRequest(let exchange, let endpoint, let form):
                guard mayTransmit(form.message(exchange: exchange, t1: now), to: endpoint, now: now) else { continue }
                // Probes too: the echoed t1 of the reply validates the address.
                if let t1 = transport?.sendClockRequest(exchange: exchange, to: endpoint, form: form) {
                    node.onClockRequestSent(exchange: exchange, to: endpoint, t1: t1)
                }
            case .sendClockReply(let exchange, let echo, let t2, let endpoint, let form):
                guard mayTransmit(form.message(exchange: exchange, echo: echo, t2: t2, t3: t2), to: endpoint, now: now) else { continue }
                transport?.sendClockReply(exchange: exchange, echo: echo, t2: t2, to: endpoint, form: form)
            case .membership(let event):
                log(event)
                switch event {
                case .stateChanged: settleDiscovery(now: now)
                case .restarted(let peer, _): refreshDiscovery(of: peer)
                default: break
                }
                if !sessionSeal.isEmpty { refreshSessionSeal() }
                // Only the peer that changed, and only for a watcher: at start a device meets
                // every peer, and listing them all at each meeting was 5 % of its CPU at 64.
                if case .stateChanged(let peer, _, _) = event, isWatched(.peers), let p = node.membership.peers[peer] {
                    broadcast(PeerChangedEvent(hostTimeNs: hostTime(now), peer: info(p, now: now)), topic: .peers)
                }
            case .groupChanged(let change):
                publish(change, now: now)
            case .participantsChanged:
                broadcast(PlayersChangedEvent(hostTimeNs: hostTime(now), players: playersView(now: now).players), topic: .players)
            case .tellPlayer(let id, let instruction):
                tell(id, instruction, now: now)
            case .reply(let outcome):
                reply?(outcome)
            case .dropped(let reason, let peer):
                transport?.drop(reason.rawValue, "refused a message from a member", from: node.membership.endpoint(of: peer))
            case .ownClockStepped(let step):
                // The group must see one continuous clock from this device, whatever it did.
                clockSource.change(jumpNs: -step.ns, skewPPM: nil, atHost: hostClock.now())
                transport?.count("own_clock_steps")
                logger.warning("this device's clock jumped (every peer's seemed to move at once); stepped it back so that the group's clock stays continuous", metadata: [
                    "clock.step_ms": "\(Digits.fixed(step.milliseconds, places: 3))",
                ])
                let after = self.now()
                execute(node.onLocalClockCorrected(now: after), now: after, reply: reply)
            }
        }
    }

    private func log(_ event: Membership.Event) {
        switch event {
        case .stateChanged(let peer, let from, let to):
            let name = node.membership.peers[peer]?.name ?? peer.short
            let level: Logger.Level = to == .reachable || to == .lost ? .info : .debug
            logger.log(level: level, "peer state changed", metadata: [
                "peer.remote": "\(peer.short)", "peer.name": "\(name)", "peer.from": "\(from.map { "\($0)" } ?? "-")", "peer.state": "\(to)",
            ])
        case .restarted(let peer, let incarnation):
            logger.info("peer restarted", metadata: ["peer.remote": "\(peer.short)", "peer.incarnation": "\(incarnation)"])
        case .renamed(let peer, let name):
            logger.debug("peer named itself", metadata: ["peer.remote": "\(peer.short)", "peer.name": "\(name)"])
        case .forgotten(let peer):
            logger.debug("peer forgotten", metadata: ["peer.remote": "\(peer.short)"])
        case .refused(let peer):
            logger.warning("too many peers; ignoring one", metadata: ["peer.remote": "\(peer.short)"])
        }
    }

    // MARK: - Player socket

    public func connected(_ client: ClientConnection) {
        clients[client.id] = ClientState(connection: client)
    }

    public func disconnected(_ client: ClientConnection) {
        if let id = clients[client.id]?.playerID {
            let now = now()
            execute(node.onPlayerGone(id: id, now: now), now: now)
            rearm(now)
        }
        clients[client.id] = nil
        topicsChanged(now: now())
    }

    /// Takes a line from the socket's event loop as a job on the agent's thread, where it is
    /// handled at once (``ClientLines``): one wake-up per line.
    public nonisolated func receive(line: [UInt8], from client: ClientConnection, done: @escaping @Sendable () -> Void) {
        loop.execute { [self] in
            assumeIsolated { $0.handle(line: line, from: client) }
            done()
        }
    }

    /// Handles one line of a client: a request, answered on its connection.
    public func handle(line: [UInt8], from client: ClientConnection) {
        // Scanned when it can be: the request itself is decoded again by its handler.
        let header: RequestHeader
        if let scanned = RequestHeader(scanning: line) {
            header = scanned
        } else {
            do {
                header = try PlayerJSON.decode(RequestHeader.self, from: line)
            } catch {
                client.noteBadInput(error.message)
                client.send(error: error, requestID: nil)
                return
            }
        }
        let now = now()
        let request = Request(client: client, id: header.requestID, line: line)
        do {
            try dispatch(header.type, request, now: now)
        } catch let error as ProtocolError {
            client.noteBadInput(error.description)
            if header.requestID != nil { client.send(error: error, requestID: header.requestID) }
        } catch {
            if header.requestID != nil { client.send(error: ProtocolError(.internal, "\(error)"), requestID: header.requestID) }
        }
        rearm(now)
    }

    /// The request being handled: who asked, under which id, and its line.
    struct Request {
        let client: ClientConnection
        let id: RequestID?
        let line: [UInt8]

        func decode<T: PlayerRequest>(_ type: T.Type) throws(ProtocolError) -> T {
            try PlayerJSON.decode(T.self, from: line)
        }

        func reply(_ result: some Encodable & Sendable) {
            if let id { client.send(ReplyLine.success(id, result)) }
        }

        func reply(error: ProtocolError) {
            client.noteBadInput(error.description)
            if let id { client.send(error: error, requestID: id) }
        }
    }

    private func dispatch(_ type: String, _ request: Request, now: LocalTime) throws {
        // Members of the socket's group may play; only the agent's own user manages it (M8).
        if type.hasPrefix("group_") || type == "sim_clock", !request.client.mayManage {
            throw ProtocolError(.invalidState, "\(type) is only for the agent's own user (uid \(getuid()))")
        }
        switch type {
        case "hello":
            try hello(request, now: now)
        case "status":
            request.reply(status(now: now))
        case "peers":
            request.reply(peers(now: now))
        case "clock":
            request.reply(clock(now: now))
        case "state":
            request.reply(stateView(now: now))
        case "command":
            try command(request.decode(CommandRequest.self), request, now: now)
        case "sim_clock":
            guard configuration.testHooks else { throw ProtocolError(.invalidState, "sim_clock is a test hook: start lockstepd with --test-hooks") }
            let r = try request.decode(SimClockRequest.self)
            let jump = TimeSpan(nanoseconds: (r.jumpMs ?? 0) * 1e6)
            // Behind the agent's back, as a clock set by someone else would: the agent notices
            // the jump from its peers (``OwnClockStepDetector``).
            clockSource.change(jumpNs: jump.ns, skewPPM: r.skewPPM, atHost: hostClock.now())
            logger.warning("simulated device clock changed (test hook)", metadata: ["clock.jump_ms": "\(r.jumpMs ?? 0)", "clock.skew_ppm": "\(deviceClock.skewPPM)"])
            request.reply(EmptyResult())
        case "subscribe":
            let r = try request.decode(SubscribeRequest.self)
            clients[request.client.id]?.topics.formUnion(r.topics)
            request.reply(stateView(now: now))
            topicsChanged(now: now)
        default:
            if try dispatchGroup(type, request, now: now) { return }
            if try dispatchPlayer(type, request, now: now) { return }
            throw ProtocolError(.unknownType, "unknown request type '\(type.truncated(toUTF8: 64))'")
        }
    }

    /// What a player's hello says of it; a name with a saved output latency gets it unless the
    /// hello gives one.
    func playerInfo(_ r: HelloRequest, id: UInt32) -> PlayerSession.Info {
        let caps = r.capabilities ?? PlayerCapabilities()
        return PlayerSession.Info(
            name: r.name ?? "player \(id)", canChangeRate: caps.rate, exactSeek: caps.exactSeek, startAtHostTime: caps.startAtHostTime,
            outputLatency: .nanoseconds(r.outputLatencyNs ?? r.name.flatMap(savedOutputLatency) ?? 0), startLatency: .nanoseconds(r.startLatencyNs ?? 0),
            syncTolerance: .nanoseconds(r.syncToleranceNs ?? 0))
    }

    private func hello(_ request: Request, now: LocalTime) throws {
        let r = try request.decode(HelloRequest.self)
        guard r.protocol == PlayerProtocol.version else {
            throw ProtocolError(.unsupportedVersion, "this agent speaks player protocol \(PlayerProtocol.version), not \(r.protocol)")
        }
        var state = clients[request.client.id] ?? ClientState(connection: request.client)
        state.hello = r
        var directives: [NodeDirective] = []
        if r.role == .player && state.playerID == nil {
            let id = nextPlayerID
            nextPlayerID = nextPlayerID == .max ? 1 : nextPlayerID + 1
            state.playerID = id
            clients[request.client.id] = state
            directives = node.onPlayerHello(id: id, info: playerInfo(r, id: id), now: now)
        }
        clients[request.client.id] = state
        request.client.logger.info("client said hello", metadata: [
            "client.name": "\(r.name ?? "-")", "client.role": "\(r.role?.rawValue ?? "monitor")",
        ])
        request.reply(HelloResult(protocol: PlayerProtocol.version, playerID: state.playerID, agent: status(now: now)))
        execute(directives, now: now)
    }
}
