import Foundation
import LockstepLab
import LockstepMPV

/// Syncplay 1.6.9 (Debian's `syncplay` and `syncplay-server`) keeping the lab's mpvs in step,
/// set up as a user who wants it to work would:
///
/// - `syncplay-server --port 8999 --disable-chat` on host 1 (no password, rooms not isolated);
/// - on every host, `syncplay --no-gui --no-store -a H1:8999 -n hI -r lockstep --player-path
///   /usr/bin/mpv MEDIA -- --input-ipc-server=SOCK --vo=null --ao=null`: Syncplay starts mpv
///   itself (through its vendored python-mpv-jsonipc, with its own options: `--idle`,
///   `--hr-seek=always`, `--keep-open=always`, `--force-window`, its Lua script…) and uses the
///   `--input-ipc-server` passed after `--` as its IPC socket, which the bench also connects to;
/// - a `syncplay.ini` per host (found through `XDG_CONFIG_HOME`): ready at start, unpause
///   always, same room, no shared playlist (every host opens the file itself), the media's
///   folder as a media directory, no update check. Syncplay's sync thresholds stay at their
///   defaults (slow down at 1.5 s behind, rewind at 4 s, fast-forward at 5 s): a user would not
///   know to change them.
struct SyncplaySystem: MpvSyncSystem {
    var name: String { "syncplay" }
    var needsAvahi: Bool { false }
    let port = 8999

    var configuration: [String: String] {
        [
            "syncplay.version": "1.6.9 (Debian)",
            "syncplay.server": "syncplay-server --port \(port) --disable-chat, on h1",
            "syncplay.client": "syncplay --no-gui --no-store -a H1:\(port) -n hI -r lockstep --player-path /usr/bin/mpv MEDIA -- --input-ipc-server=SOCK --vo=null --ao=null",
            "syncplay.ini": "readyAtStart=True, unpauseAction=Always, pauseOnLeave=False, sharedPlaylistEnabled=False, mediaSearchDirectories=[media dir], checkForUpdatesAutomatically=False; thresholds at defaults",
        ]
    }

    func start(lab: Lab, hosts: [Int], media: String, progress: @Sendable (String) -> Void) async throws -> [String] {
        let sockets = hosts.map { lab.hostDirectory($0) + "/mpv.sock" }
        do {
            try await launch(lab: lab, hosts: hosts, sockets: sockets, media: media, progress: progress)
        } catch {
            await quitPlayers(sockets)  // those that came up; the lab kills the clients and the server
            throw error
        }
        return sockets
    }

    private func launch(lab: Lab, hosts: [Int], sockets: [String], media: String, progress: @Sendable (String) -> Void) async throws {
        let server = hosts[0]
        try lab.spawn(server, "syncplay-server", ["syncplay-server", "--port", String(port), "--disable-chat", "--salt", "lockstep"])
        let address = try lab.address(server)
        let listening = await waitUntil(timeout: 10, interval: 0.1) {
            (try? lab.exec(server, ["bash", "-c", "exec 3<>/dev/tcp/\(address)/\(port)"])) != nil
        }
        guard listening != nil else { throw MpvBenchFailure( "syncplay-server did not listen on \(address):\(port); see \(lab.hostDirectory(server))/syncplay-server.log") }

        let mediaDirectory = (media as NSString).deletingLastPathComponent
        for (host, socket) in zip(hosts, sockets) {
            let config = lab.hostDirectory(host) + "/syncplay"
            try FileManager.default.createDirectory(atPath: config, withIntermediateDirectories: true)
            try """
                [client_settings]
                name = h\(host)
                room = lockstep
                readyAtStart = True
                unpauseAction = Always
                pauseOnLeave = False
                sharedPlaylistEnabled = False
                mediaSearchDirectories = ['\(mediaDirectory)']

                [general]
                checkForUpdatesAutomatically = False
                language = en

                """.write(toFile: config + "/syncplay.ini", atomically: true, encoding: .utf8)
            unlink(socket)
            try lab.spawn(host, "syncplay", [
                "syncplay", "--no-gui", "--no-store", "-a", "\(address):\(port)", "-n", "h\(host)", "-r", "lockstep",
                "--player-path", "/usr/bin/mpv", media, "--",
                "--input-ipc-server=\(socket)", "--vo=null", "--ao=null",
            ], environment: ["XDG_CONFIG_HOME": config, "HOME": config])
        }
        // Each mpv up with the media loaded, then time for the clients to join the room and
        // settle (Syncplay ignores a new file's first second and polls its player every 0.1 s).
        for (host, socket) in zip(hosts, sockets) {
            let c: MPVConnection
            do { c = try await MPVConnection.connect(socketPath: socket, timeout: 20) } catch {
                throw MpvBenchFailure( "h\(host): Syncplay's mpv did not open \(socket); see \(lab.hostDirectory(host))/syncplay.log")
            }
            let loaded = await waitUntil(timeout: 20, interval: 0.1) { (try? await c.get("duration").double) != nil }
            await c.close()
            guard loaded != nil else { throw MpvBenchFailure( "h\(host): mpv did not load \(media)") }
        }
        progress("3 clients and their mpv up; letting them settle")
        try await Task.sleep(nanoseconds: 4_000_000_000)
    }

    func stop(lab: Lab, sockets: [String]) async {
        await quitPlayers(sockets)  // Syncplay's clients exit when their player quits
    }
}
