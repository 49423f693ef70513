import Foundation
import LockstepCore
import LockstepPlayerProtocol
import LockstepPeerWire
import Logging
import NIOCore

/// The agent: the shell around Lockstep's pure core (``Node``). It turns datagrams, discovery
/// events, player requests and the passing of time into calls on the node, and carries out the
/// node's directives: sending datagrams, telling players.
///
/// Runs on one NIO event loop (its executor), so that the one timer, scheduled on that loop,
/// steps the node synchronously and every piece of agent state has one owner.
public actor Agent: ClientHandler {
    /// Who this agent is, fixed for the life of the process.
    public struct Identity: Sendable {
        public var peerID: PeerID
        public var name: String
        public var incarnation: UInt64
        public var group: GroupIdentity

        public init(peerID: PeerID, name: String, incarnation: UInt64, group: GroupIdentity) {
            self.peerID = peerID
            self.name = name
            self.incarnation = incarnation
            self.group = group
        }
    }

    public nonisolated let loop: any EventLoop
    public nonisolated var unownedExecutor: UnownedSerialExecutor { loop.executor.asUnownedSerialExecutor() }

    let configuration: AgentConfiguration
    var identity: Identity
    let logger: Logger
    let startedAt: Int64
    /// The device clock (the host's monotonic clock unless a test simulates another).
    let clockSource: DeviceClockSource
    var deviceClock: DeviceClock { clockSource.current }
    var node: Node
    var transport: PeerTransport?
    var discovery: DNSSDDiscovery?
    var mdnsState = "off"
    var timer: Scheduled<Void>?
    var timerDeadline: Int64 = .max
    var tasks: [Task<Void, Never>] = []
    var clients: [UInt64: ClientState] = [:]
    var nextPlayerID: UInt32 = 1
    var keyRotation: KeyRotation?
    /// When each peer was last sent the current key because it spoke an older one.
    var keyHints: [PeerID: Int64] = [:]

    /// What the agent knows about one connected client.
    struct ClientState {
        let connection: ClientConnection
        var hello: HelloRequest?
        var playerID: UInt32?
        /// Event topics the client subscribed to.
        var topics: Set<Topic> = []
    }

    public init(configuration: AgentConfiguration, identity: Identity, loop: any EventLoop, logger: Logger) {
        self.configuration = configuration
        self.identity = identity
        self.loop = loop
        self.logger = logger
        self.startedAt = MonotonicClock.read()
        self.clockSource = DeviceClockSource(configuration.deviceClock)
        var nodeConfig = Node.Configuration()
        nodeConfig.membership.lostAfterNs = configuration.peerTimeoutNs
        nodeConfig.waitingReasons = configuration.waitingReasons
        nodeConfig.waitTimeoutNs = configuration.waitTimeoutNs
        self.node = Node(identity: .init(peer: identity.peerID, incarnation: identity.incarnation, name: identity.name), configuration: nodeConfig)
    }

    /// The local clock of the node: the device clock (the host's monotonic clock unless simulated).
    func now() -> Int64 {
        deviceClock.device(fromHost: MonotonicClock.read())
    }

    // MARK: - Lifecycle

    /// Opens the peer socket and starts discovery. Throws if the UDP port cannot be bound.
    public func start() throws {
        let socket = try PeerSocket(port: configuration.udpPort)
        let keys = [identity.group.currentKey] + (identity.group.previous.map { [$0] } ?? [])
        let transport = PeerTransport(
            socket: socket,
            sealer: EnvelopeSealer(sender: identity.peerID, incarnation: identity.incarnation, key: identity.group.currentKey),
            opener: EnvelopeOpener(me: identity.peerID, keys: keys),
            clock: clockSource, impairments: configuration.impairments, logger: logger)
        self.transport = transport
        logger.info("peer socket open", metadata: ["udp.port": "\(socket.port)"])
        if !configuration.deviceClock.isIdentity {
            logger.notice("simulating a device clock on the wire (test hook)", metadata: [
                "clock.offset_ns": "\(configuration.deviceClock.offsetNs)", "clock.skew_ppm": "\(configuration.deviceClock.skewPPM)",
            ])
        }
        if !configuration.impairments.isNone {
            logger.notice("impairing outgoing datagrams (test hook)", metadata: ["impair.all": "\(configuration.impairments.all)"])
        }
        let inbound = transport.start()
        tasks.append(Task { [weak self] in
            for await event in inbound {
                guard let self else { return }
                switch event {
                case .inbound(let datagram): await self.onInbound(datagram)
                case .transmitted(let sent): await self.onTransmitted(sent)
                }
            }
        })
        for text in configuration.staticPeers { addStaticPeer(text) }
        if configuration.mdns { startDiscovery(port: socket.port) }
        step(now())
    }

    /// Says goodbye to the peers and closes everything.
    public func stop() {
        if let transport {
            for case .send(let message, let endpoint) in node.shutdown() { transport.send(message, to: endpoint) }
        }
        timer?.cancel()
        timer = nil
        discovery?.stop()
        transport?.stop()
        for t in tasks { t.cancel() }
        tasks = []
    }

    // MARK: - Events

    func onInbound(_ d: PeerTransport.Inbound) {
        if onKeyMessage(d.message, from: d.sender, source: d.source, epochByte: d.epochByte) { return }
        let directives = node.onMessage(d.message, from: d.sender, incarnation: d.incarnation, source: d.source, receivedAt: d.receivedAt, now: now())
        execute(directives)
        rearm()
    }

    func onTransmitted(_ t: PeerTransport.Transmitted) {
        execute(node.onTransmitted(t.message, to: t.destination, at: t.sentAt, now: now()))
        rearm()
    }

    /// After an event that may have changed the node's deadlines.
    func rearmAfterEvent() { rearm() }

    /// Runs the node's timer work and re-arms the one timer for its next deadline.
    func step(_ now: Int64) {
        execute(node.onTick(now: now))
        rearm()
    }

    func rearm() {
        let now = now()
        let deadline = node.nextDeadline(now: now)
        if timer != nil && deadline >= timerDeadline { return }
        timer?.cancel()
        timerDeadline = deadline
        let delay = TimeAmount.nanoseconds(max(0, deviceClock.host(fromDevice: deadline) - deviceClock.host(fromDevice: now)))
        timer = loop.scheduleTask(in: delay) { [self] in
            self.assumeIsolated { agent in
                agent.timer = nil
                agent.timerDeadline = .max
                agent.step(agent.now())
            }
        }
    }

    func execute(_ directives: [NodeDirective]) {
        for directive in directives {
            switch directive {
            case .send(let message, let endpoint):
                transport?.send(message, to: endpoint)
            case .membership(let event):
                log(event)
                if case .stateChanged(let peer, _, _) = event, let info = peers().peers.first(where: { $0.peerID == peer.hex }) {
                    broadcast(PeerChangedEvent(hostTimeNs: MonotonicClock.read(), peer: info), topic: .peers)
                }
            case .groupChanged(let change):
                publish(change)
            case .participantsChanged:
                broadcast(PlayersChangedEvent(hostTimeNs: MonotonicClock.read(), players: playersView().players), topic: .players)
            case .tellPlayer(let id, let instruction):
                tell(id, instruction)
            }
        }
    }

    private func log(_ event: Membership.Event) {
        switch event {
        case .stateChanged(let peer, let from, let to):
            let name = node.membership.peers[peer]?.name ?? peer.short
            let level: Logger.Level = to == .reachable || to == .lost ? .info : .debug
            logger.log(level: level, "peer \(to)", metadata: ["peer.remote": "\(peer.short)", "peer.name": "\(name)", "peer.from": "\(from.map { "\($0)" } ?? "-")"])
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
            execute(node.removePlayer(id: id, now: now()))
            rearm()
        }
        clients[client.id] = nil
    }

    public func handle(line: [UInt8], from client: ClientConnection) {
        let header: RequestHeader
        do {
            header = try PlayerJSON.decode(RequestHeader.self, from: line)
        } catch {
            client.noteBadInput(error.message)
            client.send(error: error, requestID: nil)
            return
        }
        do {
            try dispatch(header, line, client)
        } catch let error as ProtocolError {
            client.noteBadInput(error.description)
            if header.requestID != nil { client.send(error: error, requestID: header.requestID) }
        } catch {
            if header.requestID != nil { client.send(error: ProtocolError(.internal, "\(error)"), requestID: header.requestID) }
        }
    }

    private func dispatch(_ header: RequestHeader, _ line: [UInt8], _ client: ClientConnection) throws {
        func reply(_ result: some Encodable & Sendable) {
            if let id = header.requestID { client.send(ReplyLine.success(id, result)) }
        }
        switch header.type {
        case "hello":
            let (result, directives) = try hello(PlayerJSON.decode(HelloRequest.self, from: line), client)
            reply(result)
            execute(directives)
            rearm()
        case "status":
            reply(status())
        case "peers":
            reply(peers())
        case "clock":
            reply(clock())
        case "state":
            reply(stateView())
        case "command":
            reply(try command(PlayerJSON.decode(CommandRequest.self, from: line)))
        case "sim_clock":
            guard configuration.testHooks else { throw ProtocolError(.invalidState, "sim_clock is a test hook: start lockstepd with --test-hooks") }
            let r = try PlayerJSON.decode(SimClockRequest.self, from: line)
            clockSource.change(jumpNs: Int64((r.jumpMs ?? 0) * 1e6), skewPPM: r.skewPPM)
            logger.warning("simulated device clock changed (test hook)", metadata: ["clock.jump_ms": "\(r.jumpMs ?? 0)", "clock.skew_ppm": "\(deviceClock.skewPPM)"])
            if (r.jumpMs ?? 0) != 0 { execute(node.onLocalClockStep(now: now())) }
            rearm()
            reply(EmptyResult())
        case "subscribe":
            let request = try PlayerJSON.decode(SubscribeRequest.self, from: line)
            clients[client.id]?.topics.formUnion(request.topics)
            reply(stateView())
        default:
            if try dispatchGroup(header.type, line, reply: { result in
                if let id = header.requestID { client.send(AnyReply(requestID: id, result: result)) }
            }) { return }
            if try dispatchPlayer(header.type, line, client, reply: { result in
                if let id = header.requestID { client.send(AnyReply(requestID: id, result: result)) }
            }) { return }
            throw ProtocolError(.unknownType, "unknown request type '\(header.type.truncated(toUTF8: 64))'")
        }
    }

    private func hello(_ request: HelloRequest, _ client: ClientConnection) throws -> (HelloResult, [NodeDirective]) {
        guard request.protocol == PlayerProtocol.version else {
            throw ProtocolError(.unsupportedVersion, "this agent speaks player protocol \(PlayerProtocol.version), not \(request.protocol)")
        }
        var state = clients[client.id] ?? ClientState(connection: client)
        var directives: [NodeDirective] = []
        state.hello = request
        if request.role == .player && state.playerID == nil {
            let id = nextPlayerID
            nextPlayerID += 1
            state.playerID = id
            let caps = request.capabilities ?? PlayerCapabilities()
            let info = PlayerSession.Info(
                name: request.name ?? "player \(id)", canChangeRate: caps.rate, exactSeek: caps.exactSeek, startAtHostTime: caps.startAtHostTime,
                outputLatencyNs: request.outputLatencyNs ?? 0, startLatencyNs: request.startLatencyNs ?? 0, syncToleranceNs: request.syncToleranceNs ?? 0)
            clients[client.id] = state
            directives = node.addPlayer(id: id, info: info, now: now())
        }
        clients[client.id] = state
        client.logger.info("client said hello", metadata: [
            "client.name": "\(request.name ?? "-")", "client.role": "\(request.role?.rawValue ?? "monitor")",
        ])
        return (HelloResult(protocol: PlayerProtocol.version, playerID: state.playerID, agent: status()), directives)
    }

    // MARK: - Views

    func status() -> AgentStatus {
        let host = MonotonicClock.read()
        let peers = node.membership.peers.values
        return AgentStatus(
            peerID: identity.peerID.hex, name: identity.name, version: LockstepVersion.current,
            playerProtocol: LockstepVersion.playerProtocol, peerProtocol: PeerProtocol.version,
            socket: configuration.socketPath, stateDir: configuration.stateDirectory, pid: getpid(),
            udpPort: transport?.socket.port ?? 0, incarnation: identity.incarnation, uptimeNs: host - startedAt, hostTimeNs: host,
            group: GroupInfo(name: identity.group.name, tag: identity.group.tag, epoch: identity.group.epoch),
            peersReachable: peers.filter { $0.state == .reachable }.count, peersKnown: peers.count,
            players: clients.values.filter { $0.playerID != nil }.count,
            mdns: mdnsState, counters: transport?.snapshot ?? [:])
    }

    func clock() -> ClockResult {
        let host = MonotonicClock.read()
        let now = deviceClock.device(fromHost: host)
        let list: [ClockInfo] = node.membership.reachable.compactMap { peer in
            guard let resolved = node.resolvedClock(of: peer, now: now), let c = node.clocks[peer] else { return nil }
            let e = resolved.estimate
            let name = node.membership.peers[peer]?.name ?? peer.short
            let source: String
            switch resolved.source {
            case .direct: source = "direct"
            case .via(let other): source = "via " + (node.membership.peers[other]?.name ?? other.short)
            }
            return ClockInfo(
                peerID: peer.hex, name: name, offsetNs: e.offset(atLocal: now), errorBoundNs: e.errorBound(atLocal: now),
                hardBoundNs: e.hardBound(atLocal: now), delayNs: e.delayNs, skewPPM: e.skewPPM, samples: e.sampleCount,
                lastSampleAgeNs: now - e.lastSampleLocal, source: source, trusted: resolved.trusted,
                closureErrorNs: resolved.closureErrorNs, worstClosureErrorNs: resolved.worstClosureErrorNs,
                worstClosureToleranceNs: resolved.worstClosureToleranceNs, paths: resolved.pathCount, lost: c.lost, rejected: c.rejected,
                sendStamps: c.lastKernelStamped ? "kernel" : "agent", kernelStamped: c.kernelStamped,
                followUpsMissed: c.stamps.followUpsMissed, stampsImplausible: c.stamps.implausible)
        }
        return ClockResult(localTimeNs: now, hostTimeNs: host, peers: list.sorted { ($0.name, $0.peerID) < ($1.name, $1.peerID) })
    }

    func peers() -> PeersResult {
        let now = now()
        let list = node.membership.peers.values.sorted { ($0.name, $0.id) < ($1.name, $1.id) }.map { p in
            PeerInfo(
                peerID: p.id.hex, name: p.name, state: p.state.rawValue,
                addresses: p.paths.map { "\($0.endpoint)" }, preferred: p.preferred.map { "\($0)" },
                stateAgeNs: now - p.since, lastHeardAgoNs: p.lastHeard.map { now - $0 },
                incarnation: p.incarnation, sources: Array(Set(p.paths.map(\.source.rawValue))).sorted())
        }
        return PeersResult(peers: list)
    }
}
