import Foundation
import LockstepCore
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
    /// Lab hosts whose agent also has a reference player (`lockstep-refplayer`) on the item; its
    /// track is read from its log and comes after the probed ones (h4, h5… in the tables).
    var reference: [Int] = []

    var name: String { gstreamer.isEmpty ? "lockstep" : "gstreamer" }
    var needsAvahi: Bool { true }

    var configuration: [String: String] {
        var c = [
            "lockstep.agent": "lockstepd on every host (the lab's group key, mDNS discovery), defaults",
            "lockstep.bridge": "lockstep mpv --headless --mpv-no-config --ipc-socket SOCK MEDIA (defaults: start latency calibrated from its mpv's own exact seeks, sync tolerance 1 ms)",
        ]
        if !reference.isEmpty {
            c["reference"] = "a reference player (lockstep-refplayer, start latency 20 ms, jitter ±100 µs) beside the player of h\(reference.map(String.init).joined(separator: ", h")), read from its log; h\(4)… in the tables"
        }
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
        if !reference.isEmpty {
            for h in reference {
                try lab.spawn(h, "refplayer", [
                    Lab.binDirectory + "/lockstep-refplayer", "--socket", lab.socket(h), "--name", "ref-h\(h)",
                    "--item", MPVBridge.absolute(media), "--log", Self.referenceLog(lab, h),
                ])
            }
            let all = hosts.count + reference.count
            let ready = await waitUntil(timeout: 20, interval: 0.1) {
                for h in hosts where (try? await lab.readyPlayers(on: h)) != all { return false }
                return true
            }
            guard ready != nil else { throw MpvBenchFailure("the reference players were not ready within 20 s") }
        }
        progress("\(hosts.count) agents, \(hosts.count - gstreamer.count) bridged mpv, \(gstreamer.count) GStreamer and \(reference.count) reference players up and ready")
        try await Task.sleep(nanoseconds: 1_000_000_000)
        return sockets
    }

    /// The GStreamer player's log of its commands: what its agent told it, the group's timeline.
    func timeline(lab: Lab) -> [GStreamerPlayer.Told]? {
        guard let h = gstreamer.min() else { return nil }
        return GStreamerPlayer.readTimeline(GStreamerPlayer.timelineLog(lab, h))
    }

    static func referenceLog(_ lab: Lab, _ host: Int) -> String { lab.hostDirectory(host) + "/refplayer.jsonl" }

    /// Each reference player's exact position, from its log, as readings every 10 ms.
    func loggedTracks(lab: Lab, from: Int64, to: Int64) -> [PositionTrack] {
        reference.compactMap { h in
            guard let trace = try? PlayerTrace(name: "ref-h\(h)", path: Self.referenceLog(lab, h)) else { return nil }
            var samples: [PositionSample] = []
            var t = from
            while t < to {
                samples.append(PositionSample(sentAt: t, receivedAt: t, position: trace.position(at: t).map { Double($0) / 1e9 }))
                t += 10 * Nanos.millisecond
            }
            return PositionTrack(kind: .continuous, samples: samples)
        }
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
