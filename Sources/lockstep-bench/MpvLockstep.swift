import Foundation
import LockstepLab
import LockstepMPV

/// Lockstep keeping the lab's mpvs in step, as a user runs it: on every host `lockstepd` (the
/// lab's group key, mDNS discovery through the host's avahi-daemon) and
/// `lockstep mpv --headless --mpv-no-config --ipc-socket SOCK MEDIA`, which starts mpv paused
/// and bridges it to the agent. Nothing is tuned for the benchmark: the bridge's defaults.
struct LockstepMpvSystem: MpvSyncSystem {
    var name: String { "lockstep" }
    var needsAvahi: Bool { true }

    var configuration: [String: String] {
        [
            "lockstep.agent": "lockstepd on every host (the lab's group key, mDNS discovery), defaults",
            "lockstep.bridge": "lockstep mpv --headless --mpv-no-config --ipc-socket SOCK MEDIA (defaults: start latency 120 ms, sync tolerance 1 ms)",
        ]
    }

    /// LOCKSTEP_BENCH_LOGS=DIR: every bridge logs its decisions, and every host's bridge and
    /// agent log is kept there (the lab is destroyed after the run).
    static let logDirectory = ProcessInfo.processInfo.environment["LOCKSTEP_BENCH_LOGS"]

    func start(lab: Lab, hosts: [Int], media: String, progress: @Sendable (String) -> Void) async throws -> [String] {
        let sockets: [String]
        do {
            sockets = try await BridgedMPV.start(lab: lab, hosts: hosts, media: media, verbose: Self.logDirectory != nil)
        } catch {
            await quitPlayers(hosts.map { BridgedMPV.mpvSocket(lab, $0) })  // those that came up
            throw MpvBenchFailure("\(error)")
        }
        progress("3 agents, 3 bridged mpv up and ready")
        try await Task.sleep(nanoseconds: 1_000_000_000)
        return sockets
    }

    func stop(lab: Lab, sockets: [String]) async {
        await quitPlayers(sockets)  // each bridge exits with its mpv
        if let dir = Self.logDirectory {
            try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            for socket in sockets {
                let host = (socket as NSString).deletingLastPathComponent, name = (host as NSString).lastPathComponent
                for log in ["lockstep-mpv", "agent"] {
                    try? FileManager.default.removeItem(atPath: "\(dir)/\(name)-\(log).log")
                    try? FileManager.default.copyItem(atPath: "\(host)/\(log).log", toPath: "\(dir)/\(name)-\(log).log")
                }
            }
        }
    }
}
