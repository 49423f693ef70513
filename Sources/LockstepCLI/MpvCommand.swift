import ArgumentParser
import Foundation
import LockstepCore
import LockstepMPV
import LockstepPlayerProtocol
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// `lockstep mpv`: plays a file or URL in mpv in step with the group (or attaches to a running
/// mpv's IPC socket), coordinating mpv with the group through the local agent with ``MPVBridge``
/// (built on the SDK's `PlaybackCoordinator`, which reconnects when the agent restarts).
struct Mpv: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Play in mpv, in step with the group: starts mpv with MEDIA (or attaches to a running mpv) and bridges it to the agent.",
        discussion: """
            Your pause, play, seek and speed changes in mpv go to the whole group; the group's \
            commands (from any peer's player or `lockstep play|pause|seek|rate`) reach this mpv \
            anchored at the same instant as everywhere else. mpv's own state says when it is ready \
            (file loaded, cache filled); buffering makes the group hold this player in stall \
            recovery until it is ready again. The OSD shows who changed what.

            The item's identity is MEDIA's URL or absolute path; give every device the same --id \
            when the same film has different paths (a local file here, a stream there).

            Examples:
              lockstep mpv ~/films/night.mkv
              lockstep mpv --id night-2019 https://example.org/night.m3u8
              mpv --input-ipc-server=/tmp/mpv.sock film.mkv &  lockstep mpv --attach /tmp/mpv.sock
            """)

    @OptionGroup var options: CommonOptions

    @Argument(help: "A file or URL to play (mpv is started with it, paused until the group plays).")
    var media: String?

    @Option(help: "Attach to a running mpv's IPC socket (its --input-ipc-server) instead of starting one.")
    var attach: String?

    @Option(help: "The item's identifier for the group (default: MEDIA's URL or absolute path).")
    var id: String?

    @Option(help: "This player's name, shown to the other peers (default: mpv).")
    var name = "mpv"

    @Option(help: "Delay from mpv to light and sound (HDMI, Bluetooth, a receiver), ms.")
    var outputLatencyMs = 0.0

    @Option(help: "Corrections are not made for errors smaller than this, ms.")
    var syncToleranceMs = 1.0

    @Option(help: "How far ahead the agent must anchor starts for this mpv (pause, exact seek, resume), ms (default: measured from this mpv's exact seeks, at least 60 ms).")
    var startLatencyMs: Double?

    @Flag(help: "No messages on mpv's OSD.")
    var noOsd = false

    @Flag(help: "Start mpv without video or sound output (--vo=null --ao=null).")
    var headless = false

    @Flag(help: "Start mpv with --no-config (ignore mpv.conf, scripts, input.conf).")
    var mpvNoConfig = false

    @Option(help: "The mpv executable.")
    var mpv = "mpv"

    @Option(parsing: .singleValue, help: "An extra option for the mpv started (repeatable), e.g. --mpv-arg=--fs.")
    var mpvArg: [String] = []

    @Option(help: "The IPC socket for the mpv started (default: a fresh path under /tmp).")
    var ipcSocket: String?

    @Flag(help: "Log every action (for debugging).")
    var verbose = false

    func validate() throws {
        if (media == nil) == (attach == nil) { throw ValidationError("give MEDIA to play, or --attach SOCKET of a running mpv (not both)") }
        if outputLatencyMs < 0 || syncToleranceMs < 0 || (startLatencyMs ?? 20) < 20 { throw ValidationError("latencies and tolerances cannot be negative, and the start latency is at least 20 ms") }
        let most = Double(PlayerLimits.latencyNs.upperBound) / 1e6
        if !(outputLatencyMs <= most && syncToleranceMs <= most && (startLatencyMs ?? 0) <= most) {
            throw ValidationError("latencies and tolerances are at most \(Int(most)) ms")
        }
    }

    func run() async throws {
        let agentSocket = options.socketPath
        var process: MPVProcess?
        let mpvSocket: String
        var itemIDs: [String: String] = [:]
        if let media {
            mpvSocket = ipcSocket ?? NSTemporaryDirectory() + "lockstep-mpv-\(getpid()).sock"
            var o = MPVOptions(socketPath: mpvSocket, media: media)
            o.executable = mpv
            o.headless = headless
            o.paused = true
            o.ignoreUserConfig = mpvNoConfig
            o.extraArguments = ["--force-media-title=\((media as NSString).lastPathComponent)"] + mpvArg
            if let id { itemIDs[MPVBridge.absolute(media)] = id }
            do {
                process = try await MPVProcess.launch(o, timeout: 30)
            } catch {
                printError("\(error)")
                throw ExitCode(1)
            }
        } else {
            mpvSocket = attach!
            if let id {
                guard let c = try? await MPVConnection.connect(socketPath: mpvSocket, timeout: 5) else {
                    printError("no mpv at \(mpvSocket) (start it with --input-ipc-server=\(mpvSocket))")
                    throw ExitCode(1)
                }
                let path = await MPVBridge.loadedPath(c)
                await c.close()
                guard let path else {
                    printError("--id: no file loaded in the mpv at \(mpvSocket)")
                    throw ExitCode(1)
                }
                itemIDs[path] = id
            }
        }
        Self.stopMPVOnSignals(process)

        var o = MPVBridge.Options(agentSocket: agentSocket, mpvSocket: mpvSocket)
        o.name = name
        o.outputLatencyNs = Int64(outputLatencyMs * 1e6)
        o.syncToleranceNs = Int64(syncToleranceMs * 1e6)
        o.policy.startLatencyNs = startLatencyMs.map { Int64($0 * 1e6) }
        o.policy.osd = !noOsd
        o.policy.itemIDs = itemIDs
        let bridge = MPVBridge(options: o, logger: Self.logger(verbose: verbose))

        var said: String?
        func sayOnce(_ line: String) {
            if said != line { printError(line) }
            said = line
        }
        while true {
            if let process, let status = process.exitStatus {
                throw ExitCode(status)
            }
            do {
                try await bridge.runSession()
                said = nil
                if process == nil || process?.isRunning == true { printError("mpv closed its IPC socket; reconnecting") }
            } catch MPVError.cannotConnect(let path, _) {
                if let process, !process.isRunning { continue }
                sayOnce("no mpv at \(path) (retrying every second)")
            } catch {
                sayOnce("\(error) (retrying every second)")
            }
            try await Task.sleep(nanoseconds: 1_000_000_000)
        }
    }

    /// To standard error: what the user and the group did, and errors; `verbose` adds every
    /// decision of the bridge (debug).
    static func logger(verbose: Bool) -> Logger {
        Logger(label: "lockstep-mpv") { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = verbose ? .debug : .info
            return handler
        }
    }

    /// The mpv this command started does not outlive it.
    static func stopMPVOnSignals(_ process: MPVProcess?) {
        guard let pid = process?.pid else { return }
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler {
                kill(pid, SIGTERM)
                kill(pid, SIGCONT)
                Glibc.exit(128 + sig)
            }
            source.resume()
            signalSources.append(source)
        }
    }
}

/// Kept alive for the process's life; written once, at start, before any signal can come.
nonisolated(unsafe) private var signalSources: [any DispatchSourceSignal] = []
