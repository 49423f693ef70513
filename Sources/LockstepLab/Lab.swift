import Foundation
import LockstepClient
import LockstepPlayerProtocol
import LockstepPeerWire

/// A network lab of several hosts on this machine, driven through `tools/lab`: for lab tests
/// and benchmarks. Each host has its own network namespace, `/run`, dbus and avahi-daemon, and
/// (once started) one `lockstepd` whose socket is reachable from here.
///
/// Needs root. Always ``destroy()`` it (it kills what it started and deletes its namespaces).
public final class Lab: @unchecked Sendable {
    // @unchecked: immutable after init except `destroyed`, which is only set by destroy().
    public let directory: String
    public let hosts: Int
    public let joinCode: String
    let script: String
    let binDirectory: String
    private var destroyed = false

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// True where a lab can be built: root, and the caller asked for lab tests (LOCKSTEP_LAB=1).
    public static var isEnabled: Bool {
        getuid() == 0 && ProcessInfo.processInfo.environment["LOCKSTEP_LAB"] == "1"
    }

    /// The repository root (found from this file's location at build time, or LOCKSTEP_ROOT).
    public static var repositoryRoot: String {
        if let root = ProcessInfo.processInfo.environment["LOCKSTEP_ROOT"] { return root }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    }

    /// Where the built executables are: LOCKSTEP_BIN, else next to the running executable.
    public static var binDirectory: String {
        if let bin = ProcessInfo.processInfo.environment["LOCKSTEP_BIN"] { return bin }
        return URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent().path
    }

    /// Builds `hosts` hosts (with avahi-daemons unless `avahi` is false). One join code is made
    /// for the lab's group; ``startAgent(_:flags:environment:)`` gives it to every agent.
    public init(hosts: Int, avahi: Bool = true, name: String = "lab") throws {
        self.hosts = hosts
        self.script = Lab.repositoryRoot + "/tools/lab"
        self.binDirectory = Lab.binDirectory
        self.directory = "/tmp/lockstep-lab/\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max) % 100_000)"
        self.joinCode = JoinCode.make(GroupIdentity(name: "lab", key: .random()))
        _ = try run(["create", directory, String(hosts)] + (avahi ? [] : ["--no-avahi"]))
    }

    deinit { destroy() }

    /// Kills everything the lab started and deletes its namespaces. Safe to call twice. With
    /// `LOCKSTEP_LAB_KEEP=DIR`, the lab's directory (agent, player and avahi logs, state) is
    /// copied into DIR first: how a lab test that fails one run in ten is read afterwards.
    public func destroy() {
        guard !destroyed else { return }
        destroyed = true
        if let keep = ProcessInfo.processInfo.environment["LOCKSTEP_LAB_KEEP"], !keep.isEmpty {
            _ = try? Shell.run("/bin/cp", ["-a", directory, keep + "/" + URL(fileURLWithPath: directory).lastPathComponent])
        }
        _ = try? run(["destroy", directory])
    }

    public func socket(_ host: Int) -> String { "\(directory)/h\(host)/agent.sock" }
    public func hostDirectory(_ host: Int) -> String { "\(directory)/h\(host)" }

    /// The process id `tools/lab` recorded for process `name` (`agent`, `player`…) on `host`.
    public func pid(of name: String, on host: Int) throws -> Int32 {
        // tools/lab records "PID STARTTIME" (the start time guards against PID reuse).
        let record = try String(contentsOfFile: "\(hostDirectory(host))/\(name).pid", encoding: .utf8)
        guard let pid = record.split(whereSeparator: \.isWhitespace).first.flatMap({ Int32($0) }) else {
            throw Failure(description: "no \(name) pid for h\(host)")
        }
        return pid
    }

    /// The host's eth0 IPv4 address.
    public func address(_ host: Int) throws -> String {
        try run(["exec", directory, String(host), "sh", "-c", "echo $LAB_ADDR"]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Starts `lockstepd` on `host` with the lab's group, waits until its socket answers.
    public func startAgent(_ host: Int, flags: [String] = [], environment: [String: String] = [:], wait: Bool = true) throws {
        var env = environment
        env["LOCKSTEP_JOIN_CODE"] = env["LOCKSTEP_JOIN_CODE"] ?? joinCode
        env["LOCKSTEP_BIN"] = binDirectory
        _ = try run(["agent", directory, String(host)] + flags, environment: env)
        if wait { try waitForSocket(host) }
    }

    /// Waits until the agent on `host` answers `status`.
    public func waitForSocket(_ host: Int, timeout: Double = 10) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if FileManager.default.fileExists(atPath: socket(host)) { return }
            usleep(20_000)
        }
        throw Failure(description: "the agent on h\(host) did not open its socket within \(timeout) s; see \(hostDirectory(host))/agent.log")
    }

    /// Signals a process started on `host` (default: the agent) and waits for it to exit.
    public func kill(_ host: Int, _ name: String = "agent", signal: String = "TERM") throws {
        _ = try run(["kill", directory, String(host), name, signal])
    }

    /// Starts `arguments` in the background on `host`, named `name`; returns its pid.
    @discardableResult
    public func spawn(_ host: Int, _ name: String, _ arguments: [String], environment: [String: String] = [:]) throws -> Int32 {
        let out = try run(["spawn", directory, String(host), name] + arguments, environment: environment)
        guard let pid = Int32(out.trimmingCharacters(in: .whitespacesAndNewlines)) else { throw Failure(description: "spawn printed no pid: \(out)") }
        return pid
    }

    /// Runs `arguments` on `host` and returns its standard output.
    public func exec(_ host: Int, _ arguments: [String]) throws -> String {
        try run(["exec", directory, String(host)] + arguments)
    }

    public func avahi(_ host: Int, _ action: String) throws {
        _ = try run(["avahi", directory, String(host), action])
    }

    /// Cuts the lab into groups of hosts that cannot reach each other.
    public func partition(_ groups: [[Int]]) throws {
        _ = try run(["partition", directory] + groups.map { $0.map(String.init).joined(separator: " ") })
    }

    public func heal() throws {
        _ = try run(["heal", directory])
    }

    /// A request to the agent on `host`.
    public func request<R: Decodable & Sendable>(_ host: Int, _ type: String, _ params: some Encodable & Sendable = EmptyResult(), as: R.Type = R.self) async throws -> R {
        try await LockstepClient.withConnection(socketPath: socket(host)) { try await $0.request(type, params, as: R.self) }
    }

    @discardableResult
    func run(_ arguments: [String], environment: [String: String] = [:]) throws -> String {
        var env = ProcessInfo.processInfo.environment
        env["LOCKSTEP_BIN"] = binDirectory
        for (k, v) in environment { env[k] = v }
        let r = try Shell.run("/bin/bash", [script] + arguments, environment: env)
        guard r.status == 0 else {
            throw Failure(description: "tools/lab \(arguments.prefix(3).joined(separator: " ")) failed: \(r.stderr.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        return r.stdout
    }

    /// Whether every agent among `hosts` lists every other one (by its lab name, hN) as reachable.
    public func allReachable(among hosts: [Int]) async throws -> Bool {
        try await reachableInstants(among: hosts, by: \.name) { "h\($0)" } != nil
    }

    /// If every agent among `hosts` lists every other one as reachable, by peer id (`ids`: each
    /// host's, from its `status`), when each became so: `[h: [other: instant]]`; nil if one does
    /// not yet. Unlike ``allReachable(among:)`` it does not wait for names: a peer is reachable
    /// once its datagrams are, and its `hello` may come later. The instants are each agent's own
    /// record (its peer's `state_age_ns`, taken from when the answer arrived, so never earlier
    /// than the truth), not when a poll saw it: on a machine busy with a group forming, one look
    /// at every agent takes a good part of a second.
    public func reachableInstants(among hosts: [Int], ids: [Int: String]) async throws -> [Int: [Int: Date]]? {
        try await reachableInstants(among: hosts, by: \.peerID) { ids[$0] }
    }

    /// If every agent among `hosts` lists, as reachable, a peer whose `key` is `expected(h)` for
    /// every other host h (nil: not known, so not listed), when each became so; otherwise nil.
    private func reachableInstants(among hosts: [Int], by key: KeyPath<PeerInfo, String>, _ expected: (Int) -> String?) async throws -> [Int: [Int: Date]]? {
        var instants: [Int: [Int: Date]] = [:]
        for h in hosts {
            let p: PeersResult = try await request(h, "peers")
            let answered = Date()
            let reachable = Dictionary(p.peers.filter { $0.state == "reachable" }.map { ($0[keyPath: key], $0.stateAgeNs) }, uniquingKeysWith: min)
            for other in hosts where other != h {
                guard let k = expected(other), let age = reachable[k] else { return nil }
                instants[h, default: [:]][other] = answered.addingTimeInterval(-Double(max(0, age)) / 1e9)
            }
        }
        return instants
    }

    /// Each host's peer id, from its agent's `status`.
    public func peerIDs(of hosts: [Int]) async throws -> [Int: String] {
        var ids: [Int: String] = [:]
        for h in hosts {
            let s: AgentStatus = try await request(h, "status")
            ids[h] = s.peerID
        }
        return ids
    }

    /// How many players (on every peer) the agent on `h` sees ready and not suspended.
    public func readyPlayers(on h: Int) async throws -> Int {
        let p: PlayersResult = try await request(h, "players")
        return p.players.filter { $0.participant.readiness == .ready && $0.participant.suspensionReasons.isEmpty }.count
    }
}

/// Polls `condition` every `interval` until it holds or `timeout` passes; returns the elapsed
/// seconds when it held, nil on timeout.
public func waitUntil(timeout: Double, interval: Double = 0.05, _ condition: () async throws -> Bool) async rethrows -> Double? {
    let start = Date()
    while true {
        if try await condition() { return Date().timeIntervalSince(start) }
        if Date().timeIntervalSince(start) > timeout { return nil }
        try? await Task.sleep(nanoseconds: UInt64(interval * 1e9))
    }
}
