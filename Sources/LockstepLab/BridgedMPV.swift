import Foundation
import LockstepMPV

/// Lab hosts each running `lockstepd` and `lockstep mpv` (a headless mpv bridged to the agent),
/// as a user runs them: what `tools/bench mpv` measures as "lockstep" and the mpv lab tests use.
/// Hosts named in `gstreamer` run the Python SDK's GStreamer player instead
/// (`tools/clients/python/examples/gst_player.py`), which answers the same IPC for the probe.
public enum BridgedMPV {
    /// Each host's mpv IPC socket (the bridge's `--ipc-socket`).
    public static func mpvSocket(_ lab: Lab, _ host: Int) -> String { lab.hostDirectory(host) + "/mpv.sock" }

    /// Starts an agent on every host (the lab's group key), waits until they see each other,
    /// then `lockstep mpv --headless --mpv-no-config` with `media` on every host, and waits until
    /// every agent sees all the players ready. Returns the mpv sockets, in `hosts` order.
    /// `verbose` makes each bridge log every decision to its host's `lockstep-mpv.log`.
    public static func start(lab: Lab, hosts: [Int], media: String, verbose: Bool = false, gstreamer: Set<Int> = []) async throws -> [String] {
        for h in hosts { try lab.startAgent(h) }
        let found = await waitUntil(timeout: 20, interval: 0.1) { (try? await lab.allReachable(among: hosts)) == true }
        guard found != nil else { throw Lab.Failure(description: "the agents did not find each other within 20 s") }
        let sockets = hosts.map { mpvSocket(lab, $0) }
        for (h, socket) in zip(hosts, sockets) {
            unlink(socket)
            if gstreamer.contains(h) {
                try GStreamerPlayer.spawn(lab: lab, host: h, ipcSocket: socket, media: media, verbose: verbose)
                continue
            }
            try lab.spawn(h, "lockstep-mpv", [
                Lab.binDirectory + "/lockstep", "mpv", "--socket", lab.socket(h), "--name", "mpv-h\(h)",
                "--headless", "--mpv-no-config", "--ipc-socket", socket, "--no-osd",
            ] + (verbose ? ["--verbose"] : []) + [media])
        }
        for (h, socket) in zip(hosts, sockets) {
            guard let c = try? await MPVConnection.connect(socketPath: socket, timeout: 30) else {
                let log = gstreamer.contains(h) ? GStreamerPlayer.logName : "lockstep-mpv"
                throw Lab.Failure(description: "h\(h): no player answers at \(socket); see \(lab.hostDirectory(h))/\(log).log")
            }
            await c.close()
        }
        let ready = await waitUntil(timeout: 20, interval: 0.1) {
            for h in hosts where (try? await lab.readyPlayers(on: h)) != hosts.count { return false }
            return true
        }
        guard ready != nil else {
            throw Lab.Failure(description: "the bridged players were not all ready within 20 s; see lockstep-mpv.log in the lab's host directories")
        }
        return sockets
    }
}
