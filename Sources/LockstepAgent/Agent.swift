import Foundation
import LockstepCore
import LockstepWire
import Logging
import NIOCore

/// The agent: the shell around Lockstep's pure core. It owns the sockets' other ends, turns bytes
/// into events for the core, and carries out what the core answers.
///
/// Runs on one NIO event loop (its executor), so that timers scheduled on that loop can step
/// the core synchronously and every piece of agent state has one owner.
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
    let hostClock = MonotonicClock()
    let startedAt: Int64
    var udpPort: UInt16 = 0
    var clients: [UInt64: ClientState] = [:]
    var nextPlayerID: UInt32 = 1

    /// What the agent knows about one connected client.
    struct ClientState {
        let connection: ClientConnection
        var hello: HelloRequest?
        var playerID: UInt32?
    }

    public init(configuration: AgentConfiguration, identity: Identity, loop: any EventLoop, logger: Logger) {
        self.configuration = configuration
        self.identity = identity
        self.loop = loop
        self.logger = logger
        self.startedAt = MonotonicClock.read()
    }

    // MARK: - Player socket

    public func connected(_ client: ClientConnection) {
        clients[client.id] = ClientState(connection: client)
    }

    public func disconnected(_ client: ClientConnection) {
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
            client.send(error: error, requestID: header.requestID)
        } catch {
            client.send(error: ProtocolError(.internal, "\(error)"), requestID: header.requestID)
        }
    }

    private func dispatch(_ header: RequestHeader, _ line: [UInt8], _ client: ClientConnection) throws {
        func reply(_ result: some Encodable & Sendable) {
            if let id = header.requestID { client.send(ReplyLine.success(id, result)) }
        }
        switch header.type {
        case "hello":
            reply(try hello(PlayerJSON.decode(HelloRequest.self, from: line), client))
        case "status":
            reply(status())
        default:
            throw ProtocolError(.unknownType, "unknown request type '\(header.type.truncated(toUTF8: 64))'")
        }
    }

    private func hello(_ request: HelloRequest, _ client: ClientConnection) throws -> HelloResult {
        guard request.protocol == PlayerProtocol.version else {
            throw ProtocolError(.unsupportedVersion, "this agent speaks player protocol \(PlayerProtocol.version), not \(request.protocol)")
        }
        var state = clients[client.id] ?? ClientState(connection: client)
        state.hello = request
        if request.role == .player && state.playerID == nil {
            state.playerID = nextPlayerID
            nextPlayerID += 1
        }
        clients[client.id] = state
        client.logger.info("client said hello", metadata: [
            "client.name": "\(request.name ?? "-")", "client.role": "\(request.role?.rawValue ?? "monitor")",
        ])
        return HelloResult(protocol: PlayerProtocol.version, playerID: state.playerID, agent: status())
    }

    // MARK: - Views

    func status() -> AgentStatus {
        let now = hostClock.now()
        return AgentStatus(
            peerID: identity.peerID.hex, name: identity.name, version: LockstepVersion.current,
            playerProtocol: LockstepVersion.playerProtocol, peerProtocol: LockstepVersion.peerProtocol,
            socket: configuration.socketPath, stateDir: configuration.stateDirectory, pid: getpid(),
            udpPort: udpPort, incarnation: identity.incarnation, uptimeNs: now - startedAt, hostTimeNs: now,
            group: GroupInfo(name: identity.group.name, tag: identity.group.tag, epoch: identity.group.epoch),
            peersReachable: 0, peersKnown: 0, players: clients.values.filter { $0.playerID != nil }.count,
            mdns: configuration.mdns ? "starting" : "off")
    }
}
