import ArgumentParser
import Foundation
import LockstepAgent
import LockstepCore
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
    var port: UInt16?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String?

    @Option(name: .customLong("peer"), help: "A peer to contact without discovery, HOST:PORT (repeatable; LOCKSTEP_PEER takes a comma-separated list).")
    var peers: [String] = []

    @Flag(name: .customLong("no-mdns"), help: "Do not publish or browse with DNS-SD (use --peer).")
    var noMDNS = false

    @Option(name: .customLong("peer-timeout"), help: "Seconds without an answer after which a peer is lost.")
    var peerTimeout: Double?

    @Option(name: .customLong("waiting-reasons"), help: "Suspension reasons that make the group wait instead of playing on, comma-separated (e.g. interstitial,user-action-required). Give every agent the same list.")
    var waitingReasons: String?

    @Option(name: .customLong("wait-timeout"), help: "Seconds a group waits for its participants to be ready before starting anyway.")
    var waitTimeout: Double?

    @Option(name: .customLong("sim-clock-offset"), parsing: .unconditional, help: "Test hook: pretend this device's clock is off by SECONDS on the wire.")
    var simClockOffset: Double?

    @Option(name: .customLong("sim-clock-skew"), parsing: .unconditional, help: "Test hook: pretend this device's clock runs fast by PPM on the wire.")
    var simClockSkew: Double?

    @Option(name: .customLong("impair"), help: "Test hook: impair outgoing datagrams, e.g. delay=5ms,jitter=1ms,loss=10%,dup=1%.")
    var impair: String?

    @Flag(name: .customLong("test-hooks"), help: "Test hook: allow 'sim_clock' requests on the socket (make this agent's clock jump or drift while it runs).")
    var testHooks = false

    @Option(name: .customLong("impair-to"), help: "Test hook: impairment for one destination address, ADDRESS=SPEC (repeatable).")
    var impairTo: [String] = []

    func run() async throws {
        let env = ProcessInfo.processInfo.environment
        func setting(_ flag: String?, _ variable: String) -> String? {
            flag ?? env["LOCKSTEP_" + variable].flatMap { $0.isEmpty ? nil : $0 }
        }
        func fail(_ message: String) -> Never {
            FileHandle.standardError.write(Data("lockstepd: \(message)\n".utf8))
            Foundation.exit(1)
        }

        let levelText = setting(logLevel, "LOG_LEVEL") ?? "info"
        guard let level = Logger.Level(rawValue: levelText.lowercased()) else {
            fail("unknown log level '\(levelText)' (trace, debug, info, notice, warning, error, critical)")
        }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "lockstepd")

        var config = AgentConfiguration(
            socketPath: setting(socket, "SOCKET") ?? PlayerProtocol.defaultSocketPath(environment: env.filter { $0.key != "LOCKSTEP_SOCKET" }),
            stateDirectory: setting(stateDir, "STATE_DIR") ?? StateDirectory.defaultPath())
        config.logLevel = level
        config.name = setting(name, "NAME")
        config.group = setting(group, "GROUP")
        config.joinCode = setting(joinCode, "JOIN_CODE")
        if let text = setting(socketMode, "SOCKET_MODE") {
            guard let mode = UInt32(text, radix: 8), mode <= 0o777 else { fail("--socket-mode must be octal, e.g. 0600 or 0660") }
            config.socketMode = mode
        }
        if let text = setting(socketGroup, "SOCKET_GROUP") {
            if let gid = UInt32(text) {
                config.socketGroup = gid
            } else if let entry = getgrnam(text) {
                config.socketGroup = entry.pointee.gr_gid
            } else {
                fail("--socket-group: no group named '\(text)'")
            }
        }
        if let text = setting(port.map(String.init), "PORT") {
            guard let p = UInt16(text) else { fail("--port must be 0...65535") }
            config.udpPort = p
        }
        let peerList = peers.isEmpty ? (env["LOCKSTEP_PEER"] ?? "").split(separator: ",").map(String.init) : peers
        config.staticPeers = peerList.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        config.mdns = !(noMDNS || ["1", "true", "yes"].contains(env["LOCKSTEP_NO_MDNS"]?.lowercased() ?? ""))
        if let text = setting(peerTimeout.map { String($0) }, "PEER_TIMEOUT") {
            guard let s = Double(text), s > 0, s < 3600 else { fail("--peer-timeout must be a number of seconds") }
            config.peerTimeoutNs = Nanos.from(seconds: s)
        }
        if let text = setting(waitingReasons, "WAITING_REASONS") {
            config.waitingReasons = Set(text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
        }
        if let text = setting(waitTimeout.map { String($0) }, "WAIT_TIMEOUT") {
            guard let s = Double(text), s >= 0, s < 3600 else { fail("--wait-timeout must be a number of seconds") }
            config.waitTimeoutNs = Nanos.from(seconds: s)
        }
        let offset = setting(simClockOffset.map { String($0) }, "SIM_CLOCK_OFFSET").flatMap(Double.init) ?? 0
        let skew = setting(simClockSkew.map { String($0) }, "SIM_CLOCK_SKEW").flatMap(Double.init) ?? 0
        // Epoch 0: the simulated clock is a fixed function of host time, so a benchmark can compute
        // the true offset between two agents from their flags alone.
        config.deviceClock = DeviceClock(offsetNs: Nanos.from(seconds: offset), skewPPM: skew, epochNs: 0)
        do {
            if let spec = setting(impair, "IMPAIR") { config.impairments.all = try .init(parsing: spec) }
            for entry in impairTo {
                let parts = entry.split(separator: "=", maxSplits: 1)
                guard parts.count == 2 else { fail("--impair-to takes ADDRESS=SPEC") }
                config.impairments.perDestination[String(parts[0])] = try .init(parsing: String(parts[1]))
            }
        } catch {
            fail("\(error)")
        }

        config.testHooks = testHooks || !config.deviceClock.isIdentity || !config.impairments.isNone
        let service = AgentService(configuration: config, logger: logger)
        let group = ServiceGroup(
            configuration: .init(services: [.init(service: service)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        do {
            try await group.run()
        } catch let error as SocketLock.Conflict {
            fail(error.description)
        } catch let error as StateDirectory.Failure {
            fail(error.description)
        } catch let error as ServiceGroupError {
            fail("\(error)")
        } catch {
            fail("\(error)")
        }
    }
}
