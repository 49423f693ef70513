import Foundation
import LockstepClient
import LockstepCore
import LockstepPlayerProtocol

/// A lab whose hosts each run an agent and a reference player, all following one group
/// timeline: the starting point of the fault scenarios.
public final class PlayingGroup: @unchecked Sendable {
    // @unchecked: used from one task at a time by the scenarios.
    public let lab: Lab
    public let hosts: Int
    /// How many times a player was started on each host (each run logs to its own file).
    private var runs: [Int: Int] = [:]

    /// Builds `hosts` hosts with agents (given `flags(host)`), a reference player on each, waits
    /// until everyone is reachable and ready, and starts playback.
    public init(hosts: Int, name: String, agentFlags: (Int) -> [String] = { _ in [] }, play: Bool = true) async throws {
        self.hosts = hosts
        lab = try Lab(hosts: hosts, name: name)
        do {
            for h in 1...hosts { try lab.startAgent(h, flags: agentFlags(h)) }
            guard try await waitUntil(timeout: 30, { try await self.allReachable() }) != nil else {
                throw Lab.Failure(description: "the agents did not find each other within 30 s")
            }
            try await Task.sleep(nanoseconds: 1_500_000_000)
            try await startPlayers(readyTimeout: 30, play: play)
        } catch {
            lab.destroy()
            throw error
        }
    }

    /// Adds a reference player on every host of `lab`, whose agents already run and see each
    /// other, and waits until all are ready; starts playback if `play`. The lab stays the
    /// caller's to destroy.
    public init(lab: Lab, readyTimeout: Double = 30, play: Bool = false) async throws {
        self.lab = lab
        hosts = lab.hosts
        try await startPlayers(readyTimeout: readyTimeout, play: play)
    }

    private func startPlayers(readyTimeout: Double, play: Bool) async throws {
        for h in 1...hosts { try startPlayer(h) }
        guard try await waitUntil(timeout: readyTimeout, { try await self.lab.readyPlayers(on: 1) == self.hosts }) != nil else {
            throw Lab.Failure(description: "the players were not all ready within \(Int(readyTimeout)) s")
        }
        if play {
            let _: GroupStateView = try await lab.request(1, "command", CommandRequest(action: .play))
            try await Task.sleep(nanoseconds: 1_000_000_000)
        }
    }

    public func destroy() { lab.destroy() }

    public func startPlayer(_ h: Int, drift: Double? = nil) throws {
        let d = drift ?? Double((h % 5) * 20 - 40)
        runs[h, default: 0] += 1
        try lab.spawn(h, "player", [Lab.binDirectory + "/lockstep-refplayer", "--socket", lab.socket(h), "--name", "player-h\(h)", "--drift-ppm", String(d), "--seed", String(h), "--log", playerLog(h)])
    }

    /// The log of the latest player started on `h`.
    public func playerLog(_ h: Int) -> String { lab.hostDirectory(h) + "/player-\(runs[h] ?? 1).jsonl" }

    public func allReachable(among group: [Int]? = nil) async throws -> Bool {
        try await lab.allReachable(among: group ?? Array(1...hosts))
    }

    /// The players' traces, read now.
    public func traces(_ which: [Int]? = nil) throws -> [PlayerTrace] {
        try (which ?? Array(1...hosts)).map { try PlayerTrace(name: "h\($0)", path: playerLog($0)) }
    }

    /// Spread of the players' true positions every `step` over [from, to] (host ns), in µs.
    public func spreads(_ which: [Int]? = nil, from: Int64, to: Int64, step: Int64 = 100_000_000) throws -> Stats {
        let t = try traces(which)
        var out: [Double] = []
        var x = from
        while x <= to {
            if let s = positionSpread(t, at: x) { out.append(Double(s) / 1e3) }
            x += step
        }
        return Stats(out)
    }

    /// The group state fingerprints of the given hosts.
    public func fingerprints(_ which: [Int]? = nil) async throws -> [String] {
        var out: [String] = []
        for h in which ?? Array(1...hosts) {
            let s: GroupStateView = try await lab.request(h, "state")
            out.append(s.fingerprint)
        }
        return out
    }

    /// How many times each agent stepped its own clock back (it noticed a jump of its own clock
    /// from its peers): in scenarios where no clock jumps, any is a false alarm.
    public func ownClockSteps() async throws -> UInt64 {
        var total: UInt64 = 0
        for h in 1...hosts {
            let s: AgentStatus = try await lab.request(h, "status")
            total += s.counters["own_clock_steps"] ?? 0
        }
        return total
    }

    /// The agent's process id on `h`.
    public func agentPID(_ h: Int) throws -> Int32 {
        try lab.pid(of: "agent", on: h)
    }
}

/// Resident memory (KiB) and CPU time (s) of a process, from /proc.
public func processUsage(_ pid: Int32) -> (rssKiB: Int, cpuSeconds: Double)? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
        let kib = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? ""),
        let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
    else { return nil }
    // Fields after the command name (which may contain spaces): utime is field 14, stime 15.
    let rest = stat[stat.index(after: stat.lastIndex(of: ")")!)...].split(separator: " ")
    let ticks = (Double(rest[11]) ?? 0) + (Double(rest[12]) ?? 0)
    return (kib, ticks / Double(sysconf(Int32(_SC_CLK_TCK))))
}

/// Percentiles of a sample (nearest rank).
public struct Stats: Sendable {
    public let sorted: [Double]
    public init(_ values: [Double]) { sorted = values.sorted() }
    public var count: Int { sorted.count }
    public func percentile(_ p: Double) -> Double {
        guard !sorted.isEmpty else { return .nan }
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1
        return sorted[Swift.min(Swift.max(rank, 0), sorted.count - 1)]
    }
    public var median: Double { percentile(50) }
    public var max: Double { sorted.last ?? .nan }
    public var min: Double { sorted.first ?? .nan }
}
