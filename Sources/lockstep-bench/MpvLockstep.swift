import Foundation
import LockstepLab
import LockstepMPV

/// Lockstep keeping the lab's mpvs in step, as a user runs it: on every host `lockstepd` (the
/// lab's group key, mDNS discovery through the host's avahi-daemon) and
/// `lockstep mpv --headless --mpv-no-config --ipc-socket SOCK MEDIA`, which starts mpv paused
/// and bridges it to the agent. Nothing is tuned for the benchmark: the bridge's defaults.
///
/// With `gstreamer` hosts ("gstreamer" in the report), those run the Python SDK's GStreamer
/// player instead of mpv (``GStreamerPlayer``): a third-party player beside the mpvs, in one group.
struct LockstepMpvSystem: MpvSyncSystem {
    /// Lab hosts that run the GStreamer player instead of `lockstep mpv`.
    var gstreamer: Set<Int> = []

    var name: String { gstreamer.isEmpty ? "lockstep" : "gstreamer" }
    var needsAvahi: Bool { true }

    var configuration: [String: String] {
        var c = [
            "lockstep.agent": "lockstepd on every host (the lab's group key, mDNS discovery), defaults",
            "lockstep.bridge": "lockstep mpv --headless --mpv-no-config --ipc-socket SOCK MEDIA (defaults: start latency 120 ms, sync tolerance 1 ms)",
        ]
        if !gstreamer.isEmpty {
            c["gstreamer"] = "h\(gstreamer.sorted().map(String.init).joined(separator: ", h")) run tools/clients/python/examples/gst_player.py (playbin, fakesink sync=true, Python SDK, start latency 100 ms); the other hosts lockstep mpv"
        }
        return c
    }

    /// LOCKSTEP_BENCH_LOGS=DIR: every bridge logs its decisions, and every host's bridge and
    /// agent log is kept there (the lab is destroyed after the run).
    static let logDirectory = ProcessInfo.processInfo.environment["LOCKSTEP_BENCH_LOGS"]

    func start(lab: Lab, hosts: [Int], media: String, progress: @Sendable (String) -> Void) async throws -> [String] {
        let sockets: [String]
        do {
            sockets = try await BridgedMPV.start(lab: lab, hosts: hosts, media: media, verbose: Self.logDirectory != nil, gstreamer: gstreamer)
        } catch {
            await quitPlayers(hosts.map { BridgedMPV.mpvSocket(lab, $0) })  // those that came up
            throw MpvBenchFailure("\(error)")
        }
        progress("\(hosts.count) agents, \(hosts.count - gstreamer.count) bridged mpv and \(gstreamer.count) GStreamer players up and ready")
        try await Task.sleep(nanoseconds: 1_000_000_000)
        return sockets
    }

    /// The GStreamer player's log of its commands: what its agent told it, the group's timeline.
    func timeline(lab: Lab) -> [GStreamerPlayer.Told]? {
        guard let h = gstreamer.min() else { return nil }
        return GStreamerPlayer.readTimeline(GStreamerPlayer.timelineLog(lab, h))
    }

    func stop(lab: Lab, sockets: [String]) async {
        await quitPlayers(sockets)  // each bridge exits with its mpv
        if let dir = Self.logDirectory {
            try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            for socket in sockets {
                let host = (socket as NSString).deletingLastPathComponent, name = (host as NSString).lastPathComponent
                for log in ["lockstep-mpv", GStreamerPlayer.logName, "agent"] {
                    try? FileManager.default.removeItem(atPath: "\(dir)/\(name)-\(log).log")
                    try? FileManager.default.copyItem(atPath: "\(host)/\(log).log", toPath: "\(dir)/\(name)-\(log).log")
                }
            }
        }
    }
}
