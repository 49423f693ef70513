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
import LockstepPlayerProtocol
import LockstepPeerWire
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

/// Runs an agent until it is told to stop: prepares the state directory, takes the socket,
/// serves players and peers, and on shutdown (SIGINT/SIGTERM or cancellation) removes its socket.
public struct AgentService: Service, CustomStringConvertible {
    public let configuration: AgentConfiguration
    let logger: Logger
    let onReady: @Sendable (Agent) -> Void

    public init(configuration: AgentConfiguration, logger: Logger, onReady: @escaping @Sendable (Agent) -> Void = { _ in }) {
        self.configuration = configuration
        self.logger = logger
        self.onReady = onReady
    }

    /// Loads (or creates) the agent's identity from its state directory.
    public var description: String { "AgentService(\(configuration.socketPath))" }

    public static func loadIdentity(_ configuration: AgentConfiguration) throws -> Agent.Identity {
        let dir = StateDirectory(path: configuration.stateDirectory)
        try dir.prepare()
        let (device, replaced) = try dir.deviceIdentity()
        if let replaced {
            Logger(label: "lockstepd").notice("this device now has a device key: its peer id changes once, from \(replaced.short) to \(device.peerID.short); its group's members admit it again when it announces the key")
        }
        let name = try dir.name(override: configuration.name)
        if let code = configuration.joinCode {
            let groupName = configuration.group ?? "default"
            do {
                var joined = try JoinCode.parse(code, name: groupName)
                if let existing = try dir.loadGroup(groupName), existing.id == joined.id {
                    // Same group: keep what rotations taught us if it is newer than the code.
                    if existing.epoch >= joined.epoch { joined = existing }
                }
                try dir.saveGroup(joined)
            } catch let e as JoinCode.ParseError {
                throw StateDirectory.Failure(description: "--join-code: \(e)")
            }
        }
        let group = try dir.activeGroup(selecting: configuration.group)
        let incarnation = try dir.nextIncarnation()
        return Agent.Identity(device: device, name: name, incarnation: incarnation, group: group)
    }

    public func run() async throws {
        // A socket shared with a group needs a directory its members can traverse (not list).
        let lock = try SocketLock.acquire(socketPath: configuration.socketPath, directoryMode: configuration.socketMode & 0o066 == 0 ? 0o700 : 0o711)
        defer { lock.release() }
        // A new device key (`group_reset_identity`) means an agent under it, in this process.
        while try await runAgent() == .newIdentity {}
    }

    enum Ending { case stopped, newIdentity }
    struct NewIdentity: Error {}

    private func runAgent() async throws -> Ending {
        let identity = try Self.loadIdentity(configuration)
        let group = MultiThreadedEventLoopGroup.singleton
        var log = logger
        log[metadataKey: "peer.id"] = "\(identity.peerID.short)"
        let agent = Agent(configuration: configuration, identity: identity, logger: log)
        log.info("lockstepd starting", metadata: [
            "agent.name": "\(identity.name)", "agent.version": "\(LockstepVersion.current)",
            "agent.incarnation": "\(identity.incarnation)", "group.name": "\(identity.group.name)",
            "group.tag": "\(identity.group.tag)",
        ])
        let server = PlayerServer(
            configuration: .init(socketPath: configuration.socketPath, socketMode: mode_t(configuration.socketMode), socketGroup: configuration.socketGroup.map { gid_t($0) }),
            handler: agent, group: group, logger: log)
        try await agent.start()
        var ending = Ending.stopped
        do {
            try await cancelWhenGracefulShutdown {
                try await withThrowingDiscardingTaskGroup { tasks in
                    tasks.addTask {
                        try await server.run(onListening: { onReady(agent) })
                    }
                    tasks.addTask {
                        for await _ in agent.identityReset { throw NewIdentity() }
                    }
                }
            }
        } catch is CancellationError {
            // A graceful shutdown cancels the tasks above: that is how a stop looks, not a failure.
        } catch is NewIdentity {
            ending = .newIdentity
        }
        await agent.stop()
        log.info(ending == .newIdentity ? "lockstepd starting again under a new device key" : "lockstepd stopped")
        return ending
    }
}
