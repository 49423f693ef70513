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

    /// Starts it on `host` with `media`, as the item the bridged mpvs play (its absolute path).
    @discardableResult
    public static func spawn(lab: Lab, host: Int, ipcSocket: String, media: String, verbose: Bool = false) throws -> Int32 {
        let absolute = MPVBridge.absolute(media)
        return try lab.spawn(host, logName, [
            python, script, "--socket", lab.socket(host), "--name", "gst-h\(host)", "--ipc-socket", ipcSocket, "--id", absolute,
        ] + (verbose ? ["--verbose"] : []) + [absolute])
    }
}
