import ArgumentParser
import Foundation
import LockstepClient
import LockstepPlayerProtocol

/// `lockstep`: the debug CLI. Every subcommand talks to the local agent over its socket.
public struct LockstepCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "lockstep",
        abstract: "Inspect and drive the local Lockstep agent.",
        version: LockstepVersion.current,
        subcommands: [Status.self, Peers.self, Clock.self, State.self, Watch.self, Play.self, Pause.self, Seek.self, Rate.self, Stop.self, Load.self, Players.self, Latency.self, Suspend.self, Resume.self, Group.self, Mpv.self, Web.self, Doctor.self])

    public init() {}
}

/// Options every subcommand takes.
public struct CommonOptions: ParsableArguments {
    @Option(help: "The agent's socket. Default: $LOCKSTEP_SOCKET, else $XDG_RUNTIME_DIR/lockstep/agent.sock (/run/lockstep/agent.sock as root, or when only the system agent runs).")
    public var socket: String?

    @Flag(help: "Print JSON instead of a table.")
    public var json = false

    public init() {}

    public var socketPath: String { socket ?? Self.defaultSocketPath() }

    /// `$LOCKSTEP_SOCKET`, else this user's agent, else the system agent's socket when only it
    /// exists (a desktop user in the lockstep group talking to the packaged service).
    static func defaultSocketPath(environment: [String: String] = ProcessInfo.processInfo.environment, exists: (String) -> Bool = { FileManager.default.fileExists(atPath: $0) }) -> String {
        let own = PlayerProtocol.defaultSocketPath(environment: environment)
        if environment["LOCKSTEP_SOCKET"].map({ !$0.isEmpty }) == true || exists(own) { return own }
        // The directory, not the socket: a user outside the lockstep group cannot look inside
        // it, and should then hear "not allowed", not "no agent".
        return exists(systemSocketDirectory) ? systemSocketPath : own
    }

    static let systemSocketDirectory = "/run/lockstep"

    /// Where the system service (lockstep.service) serves.
    static let systemSocketPath = "/run/lockstep/agent.sock"

    /// Connects, runs `body`, and turns every failure into one line on stderr and exit code 1.
    public func withAgent<T: Sendable>(_ body: (LockstepClient) async throws -> T) async throws -> T {
        do {
            return try await LockstepClient.withConnection(socketPath: socketPath, body)
        } catch let failure as LockstepClient.Failure {
            printError(failure.description)
            throw ExitCode(1)
        }
    }
}

func printError(_ message: String) {
    FileHandle.standardError.write(Data(errorLine(message).utf8))
}

/// The line `printError` writes: agent errors may quote names other devices chose, so they are
/// escaped for the terminal like everything else from outside.
func errorLine(_ message: String) -> String {
    "lockstep: " + Terminal.escaped(message) + "\n"
}

/// Pretty, sorted JSON for `--json` output.
func jsonText(_ value: some Encodable) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    return String(decoding: try encoder.encode(value), as: UTF8.self)
}

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Who the agent is: peer id, name, group, socket, version, uptime.")

    @OptionGroup var options: CommonOptions

    func run() async throws {
        let status: AgentStatus = try await options.withAgent { try await $0.request("status") }
        print(options.json ? try jsonText(status) : Self.render(status))
    }

    static func render(_ s: AgentStatus) -> String {
        Fields([
            ("name", s.name),
            ("peer id", s.peerID),
            ("group", "\(s.group.name) (tag \(s.group.tag), key epoch \(s.group.epoch))"),
            ("version", "\(s.version) (peer protocol \(s.peerProtocol), player protocol \(s.playerProtocol))"),
            ("socket", s.socket),
            ("state dir", s.stateDir),
            ("udp port", s.udpPort == 0 ? "-" : String(s.udpPort)),
            ("pid", String(s.pid)),
            ("incarnation", String(s.incarnation)),
            ("uptime", Human.duration(ns: s.uptimeNs)),
            ("peers", "\(s.peersReachable) reachable of \(s.peersKnown) known"),
            ("players", String(s.players)),
            ("mdns", s.mdns),
        ]).render()
    }
}
