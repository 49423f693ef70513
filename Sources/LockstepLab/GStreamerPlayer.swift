import Foundation
import LockstepMPV

/// The Python SDK's GStreamer player (`tools/clients/python/examples/gst_player.py`) on a lab
/// host: a `playbin` rendering to clock-synchronised fake sinks, coordinated through the host's
/// agent, answering a subset of mpv's JSON IPC so that ``PositionProbe`` reads its own position.
/// Run by Debian's `python3` (it needs python3-gst-1.0, which `tools/lib.sh` installs).
public enum GStreamerPlayer {
    /// The name of its process and log in the lab's host directory.
    public static let logName = "gst-player"
    /// The interpreter that has PyGObject and GStreamer's bindings (LOCKSTEP_GST_PYTHON overrides).
    public static var python: String { ProcessInfo.processInfo.environment["LOCKSTEP_GST_PYTHON"] ?? "/usr/bin/python3" }
    public static var script: String { Lab.repositoryRoot + "/tools/clients/python/examples/gst_player.py" }

    /// Where it writes every command as told (`--timeline-log`): the group's timeline on the
    /// lab's one host clock, the reference to measure every player against.
    public static func timelineLog(_ lab: Lab, _ host: Int) -> String { lab.hostDirectory(host) + "/gst-timeline.jsonl" }

    /// Starts it on `host` with `media`, as the item the bridged mpvs play (its absolute path).
    @discardableResult
    public static func spawn(lab: Lab, host: Int, ipcSocket: String, media: String, verbose: Bool = false) throws -> Int32 {
        let absolute = MPVBridge.absolute(media)
        return try lab.spawn(host, logName, [
            python, script, "--socket", lab.socket(host), "--name", "gst-h\(host)", "--ipc-socket", ipcSocket, "--id", absolute,
            "--timeline-log", timelineLog(lab, host),
        ] + (verbose ? ["--verbose"] : []) + [absolute])
    }

    /// One command as told: from `hostTimeNs`, `positionNs` + (t − `hostTimeNs`) × `rate`.
    public struct Told: Sendable, Decodable {
        public var hostTimeNs: Int64
        public var positionNs: Int64
        public var rate: Double

        enum CodingKeys: String, CodingKey {
            case hostTimeNs = "host_time_ns"
            case positionNs = "position_ns"
            case rate
        }

        /// The position (seconds) this command puts the timeline at, at host time `t`.
        public func position(at t: Int64) -> Double { (Double(positionNs) + Double(t - hostTimeNs) * rate) / 1e9 }
    }

    /// The commands in a timeline log, in order (unreadable lines skipped).
    public static func readTimeline(_ path: String) -> [Told] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { try? JSONDecoder().decode(Told.self, from: Data($0.utf8)) }
    }
}
