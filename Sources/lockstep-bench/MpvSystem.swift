import Foundation
import LockstepLab
import LockstepMPV

/// A system that keeps the lab's mpv players in step: what `tools/bench mpv` measures.
///
/// ``start(lab:hosts:media:progress:)`` must leave one headless mpv per host with `media`
/// loaded and paused near 0, its JSON IPC socket reachable from the bench (a file under the
/// lab's directory), and the system ready for a user to press play on any of them. The bench
/// then acts as the users, through each mpv's IPC (as key presses in mpv would), and watches
/// every player with a ``PositionProbe``. Implemented by ``LockstepMpvSystem`` (`lockstepd` +
/// `lockstep mpv` per host) and ``SyncplaySystem``.
protocol MpvSyncSystem: Sendable {
    /// Short name, used as the report's column: "syncplay", "lockstep".
    var name: String { get }
    /// Whether the lab's hosts need avahi-daemons.
    var needsAvahi: Bool { get }
    /// How the system is set up, for the report.
    var configuration: [String: String] { get }
    /// Starts the players and the system; returns each host's mpv IPC socket path (in `hosts` order).
    func start(lab: Lab, hosts: [Int], media: String, progress: @Sendable (String) -> Void) async throws -> [String]
    /// Stops what ``start(lab:hosts:media:progress:)`` started (the lab is destroyed afterwards).
    func stop(lab: Lab, sockets: [String]) async
    /// The group's timeline as a player was told it, when the system records it (nil: not known).
    func timeline(lab: Lab) -> [GStreamerPlayer.Told]?
    /// Tracks of players that have no IPC to probe (reference players, from their logs of their
    /// exact position), sampled every 10 ms over [from, to); added after the probed ones.
    func loggedTracks(lab: Lab, from: Int64, to: Int64) -> [PositionTrack]
}

extension MpvSyncSystem {
    func timeline(lab: Lab) -> [GStreamerPlayer.Told]? { nil }
    func loggedTracks(lab: Lab, from: Int64, to: Int64) -> [PositionTrack] { [] }
}

extension MpvSyncSystem {
    /// Quits every mpv through its socket, then SIGKILLs any that is still there (by the pid it
    /// reported): an mpv started by a system may outlive its parent and would outlive the lab.
    func quitPlayers(_ sockets: [String]) async {
        var pids: [pid_t] = []
        for socket in sockets {
            guard let c = try? await MPVConnection.connect(socketPath: socket) else { continue }
            if let pid = await withTimeout(2, { try await c.get("pid").int }) ?? nil, pid > 1 {
                pids.append(pid_t(pid))
                kill(pid_t(pid), SIGCONT)  // in case it was left stopped
            }
            _ = await withTimeout(2) { try await c.command("quit") }
            await c.close()
        }
        for _ in 0..<100 where pids.contains(where: { kill($0, 0) == 0 && !isZombie($0) }) {
            try? await Task.sleep(nanoseconds: 20_000_000)
        }
        for pid in pids where kill(pid, 0) == 0 && !isZombie(pid) { kill(pid, SIGKILL) }
    }
}

/// True if `pid` has exited but is not reaped yet (its parent, not us, will reap it).
func isZombie(_ pid: pid_t) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.range(of: ") ", options: .backwards)
    else { return true }
    return stat[close.upperBound...].hasPrefix("Z")
}

/// Why an mpv benchmark could not run.
struct MpvBenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// `body`'s result, or nil if it throws or takes longer than `seconds` (it is then cancelled).
func withTimeout<T: Sendable>(_ seconds: Double, _ body: @escaping @Sendable () async throws -> T) async -> T? {
    await withTaskGroup(of: T?.self) { group in
        group.addTask { try? await body() }
        group.addTask {
            try? await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}
