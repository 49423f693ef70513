import ArgumentParser
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
import LockstepAgent
import LockstepWeb
import LockstepPlayerProtocol
import Logging
import ServiceLifecycle

/// `lockstepd`: the Lockstep agent. One per device; needs no configuration.
@main
struct LockstepDaemon: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lockstepd",
        abstract: "The Lockstep agent: finds its peers, keeps clocks in step, and keeps players in sync.",
        discussion: """
            Every option can also be given as an environment variable (LOCKSTEP_ and the option's
            name in capitals, e.g. LOCKSTEP_SOCKET, LOCKSTEP_LOG_LEVEL); a flag wins over the variable.
            """,
        version: LockstepVersion.current)

    @Option(help: "Unix socket for players and the CLI. Default: $XDG_RUNTIME_DIR/lockstep/agent.sock, /run/lockstep/agent.sock as root.")
    var socket: String?

    @Option(name: .customLong("socket-mode"), help: "File mode of the socket, octal (0600 = only this user, 0660 = also --socket-group).")
    var socketMode: String?

    @Option(name: .customLong("socket-group"), help: "Group (name or number) that owns the socket, for --socket-mode 0660.")
    var socketGroup: String?

    @Option(name: .customLong("state-dir"), help: "Where the peer id, name and group keys are kept. Default: $XDG_STATE_HOME/lockstep, /var/lib/lockstep as root.")
    var stateDir: String?

    @Option(help: "Human name of this device (kept for next time). Default: the hostname.")
    var name: String?

    @Option(help: "Name of the stored group to use; created with a new key if it does not exist. Default: the last one used, or 'default'.")
    var group: String?

    @Option(name: .customLong("join-code"), help: "Join the group of this code (from 'lockstep group create') before starting. Prefer the LOCKSTEP_JOIN_CODE variable: flags are visible to other users.")
    var joinCode: String?

    @Option(help: "UDP port for peers; 0 picks a free one.")
    var port: String?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String?

    @Option(name: .customLong("peer"), help: "A peer to contact without discovery, HOST:PORT (repeatable; LOCKSTEP_PEER takes a comma-separated list).")
    var peers: [String] = []

    @Flag(name: .customLong("no-mdns"), help: "Do not publish or browse with DNS-SD (use --peer).")
    var noMDNS = false

    @Option(name: .customLong("peer-timeout"), help: "Seconds without an answer after which a peer is lost (0.1...3600).")
    var peerTimeout: String?

    @Option(name: .customLong("full-mesh-up-to"), help: "Up to this many peers every peer's clock is measured; above, each agent measures a grid's row and column and reaches the rest in two hops (0...64, default 8; give every agent the same value).")
    var fullMeshUpTo: String?

    @Option(name: .customLong("waiting-reasons"), help: "Suspension reasons that make the group wait instead of playing on, comma-separated (e.g. interstitial,user-action-required). Give every agent the same list.")
    var waitingReasons: String?

    @Option(name: .customLong("wait-timeout"), help: "Seconds a group waits for its participants to be ready before starting anyway (0...3600).")
    var waitTimeout: String?

    @Option(name: .customLong("sim-clock-offset"), parsing: .unconditional, help: "Test hook: pretend this device's clock is off by SECONDS on the wire (within a day).")
    var simClockOffset: String?

    @Option(name: .customLong("sim-clock-skew"), parsing: .unconditional, help: "Test hook: pretend this device's clock runs fast by PPM on the wire (within ±1000).")
    var simClockSkew: String?

    @Option(name: .customLong("impair"), help: "Test hook: impair outgoing datagrams, e.g. delay=5ms,jitter=1ms,loss=10%,dup=1%.")
    var impair: String?

    @Flag(name: .customLong("test-hooks"), help: "Test hook: allow 'sim_clock' requests on the socket (make this agent's clock jump or drift while it runs).")
    var testHooks = false

    @Option(name: .customLong("impair-to"), help: "Test hook: impairment for one destination address, ADDRESS=SPEC (repeatable).")
    var impairTo: [String] = []

    @Option(help: "Serve the web player and dashboard on [ADDR:]PORT (loopback without ADDR; other devices must pair with the code the agent logs).")
    var web: String?

    @Option(name: .customLong("web-media"), help: "A folder of media files the web endpoint serves at /media/ (with range requests).")
    var webMedia: String?

    /// The options as given, for ``DaemonOptions/configuration(environment:)`` to check.
    var options: DaemonOptions {
        var o = DaemonOptions()
        o.socket = socket
        o.socketMode = socketMode
        o.socketGroup = socketGroup
        o.stateDir = stateDir
        o.name = name
        o.group = group
        o.joinCode = joinCode
        o.port = port
        o.logLevel = logLevel
        o.peers = peers
        o.noMDNS = noMDNS
        o.peerTimeout = peerTimeout
        o.fullMeshUpTo = fullMeshUpTo
        o.waitingReasons = waitingReasons
        o.waitTimeout = waitTimeout
        o.simClockOffset = simClockOffset
        o.simClockSkew = simClockSkew
        o.impair = impair
        o.impairTo = impairTo
        o.testHooks = testHooks
        o.web = web
        o.webMedia = webMedia
        return o
    }

    func run() async throws {
        let (config, level): (AgentConfiguration, Logger.Level)
        let environment = ProcessInfo.processInfo.environment
        do {
            (config, level) = try options.configuration(environment: environment)
        } catch {
            throw ValidationError(error.description)
        }
        let web: WebConfiguration?
        do {
            web = try WebConfiguration(settings: options.webSettings(environment: environment), socketPath: config.socketPath)
        } catch {
            throw ValidationError(error.description)
        }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "lockstepd")
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: AgentService(configuration: config, logger: logger))]
        if let web {
            services.append(.init(service: WebServer(configuration: web, logger: logger), successTerminationBehavior: .gracefullyShutdownGroup, failureTerminationBehavior: .gracefullyShutdownGroup))
        }
        let group = ServiceGroup(configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        do {
            try await group.run()
        } catch let error as SocketLock.Conflict {
            throw Failure(error.description)
        } catch let error as StateDirectory.Failure {
            throw Failure(error.description)
        }
    }
}

/// A failure to run, said in one line (and exit status 1).
struct Failure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
