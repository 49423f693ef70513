#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import LockstepCore
import Synchronization
import LockstepPlayerProtocol

/// How to start a headless mpv that a program drives over its IPC socket.
///
/// ``arguments`` is the whole command line, for ``MPVProcess/launch(_:timeout:)`` or for
/// starting mpv some other way (in a lab host, say):
///
///     mpv --idle=yes --input-ipc-server=PATH --vo=null --ao=null --keep-open=yes
///         --no-terminal --no-config [--ao-null-buffer=S] [--pause] [EXTRA...] [MEDIA]
public struct MPVOptions: Sendable, Equatable {
    /// The mpv executable (looked up on PATH unless it contains a slash).
    public var executable = "mpv"
    /// Where mpv listens (`--input-ipc-server`). Any stale file there is removed at launch.
    public var socketPath: String
    /// A file to load at start; nil starts idle (`--idle=yes` keeps mpv running either way).
    public var media: String?
    /// `--vo=null --ao=null`: no window, no sound card; the null audio output still plays in
    /// real time, so positions advance as with a real device.
    public var headless = true
    /// `--ao-null-buffer` in seconds (mpv's default: 0.2). Smaller buffers make `time-pos`
    /// step finer, but underrun under load (seen at 0.02 s on a busy 2-core machine: each
    /// underrun loses time); ``PositionProbe`` reads `audio-pts`, which does not step, so the
    /// default suits it.
    public var aoNullBuffer: Double?
    /// Start paused (`--pause`).
    public var paused = false
    /// `--keep-open=yes`: stay on the last frame at the end instead of unloading the file.
    public var keepOpen = true
    /// `--no-config`: ignore the user's mpv.conf, scripts and input.conf (reproducible runs).
    public var ignoreUserConfig = true
    /// `--log-file=PATH`, for debugging.
    public var logFile: String?
    /// More mpv options, added before the media.
    public var extraArguments: [String] = []

    public init(socketPath: String, media: String? = nil) {
        self.socketPath = socketPath
        self.media = media
    }

    /// The command line, executable first.
    public var arguments: [String] {
        var a = [executable, "--idle=yes", "--input-ipc-server=\(socketPath)", "--no-terminal"]
        if ignoreUserConfig { a.append("--no-config") }
        if headless { a += ["--vo=null", "--ao=null"] }
        if let aoNullBuffer { a.append("--ao-null-buffer=\(aoNullBuffer)") }
        if keepOpen { a.append("--keep-open=yes") }
        if paused { a.append("--pause") }
        if let logFile { a.append("--log-file=\(logFile)") }
        a += extraArguments
        if let media { a += ["--", media] }
        return a
    }
}

/// An mpv process this program started: ``launch(_:timeout:)`` starts it and returns once its
/// IPC socket answers; ``terminate(timeout:)`` stops it. ``suspend()`` and ``resume()``
/// (SIGSTOP/SIGCONT) freeze it, as a stalled player.
///
/// Started with ``PosixSpawn`` and reaped with `waitpid`, never through Foundation's `Process`
/// (whose child tracking misses exits when called from Swift-concurrency threads on Linux).
/// The child gets a clean signal mask and default dispositions; its output goes to /dev/null
/// (use ``MPVOptions/logFile`` to see what it says).
public final class MPVProcess: Sendable {
    public let pid: pid_t
    public let options: MPVOptions
    private let exited = Mutex<Int32?>(nil)

    private init(pid: pid_t, options: MPVOptions) {
        self.pid = pid
        self.options = options
    }

    deinit {
        if exitStatus == nil {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        }
    }

    /// Starts mpv and waits (up to `timeout` seconds) until its socket answers
    /// `get_property mpv-version`, and with ``MPVOptions/media`` until the file is loaded and
    /// its playback initialized (`time-pos` is known). Kills it and throws if that does not happen in time.
    public static func launch(_ options: MPVOptions, timeout: Double = 10) async throws -> MPVProcess {
        unlink(options.socketPath)
        let process = try spawn(options)
        let deadline = MonotonicClock.read() + Nanos.from(seconds: timeout)
        while MonotonicClock.read() < deadline {
            if let status = process.poll() {
                throw MPVError.launchFailed("mpv exited at once (status \(status)); command: \(options.arguments.joined(separator: " "))")
            }
            if let connection = try? await MPVConnection.connect(socketPath: options.socketPath) {
                // With media: until its playback is initialized (`time-pos` known; `duration` comes
                // earlier, when a seek is still refused), so it can be sought at once.
                let answered = (try? await connection.get(options.media == nil ? "mpv-version" : "time-pos")) != nil
                await connection.close()
                if answered { return process }
            }
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        await process.terminate()
        throw MPVError.launchFailed("mpv's socket \(options.socketPath) did not answer\(options.media == nil ? "" : ", or the media did not load,") within \(timeout) s")
    }

    /// A new connection to this mpv's socket.
    public func connect(timeout: Double = 2) async throws -> MPVConnection {
        try await MPVConnection.connect(socketPath: options.socketPath, timeout: timeout)
    }

    /// mpv's exit status once it has exited (128 + signal if a signal ended it), else nil.
    public var exitStatus: Int32? { poll() }

    public var isRunning: Bool { poll() == nil }

    /// Freezes mpv (SIGSTOP): its threads stop, its socket stops answering, its audio clock
    /// stops too (the null output catches up by underrunning once it runs again).
    public func suspend() {
        if isRunning { kill(pid, SIGSTOP) }
    }

    /// Lets a suspended mpv run again (SIGCONT).
    public func resume() {
        if isRunning { kill(pid, SIGCONT) }
    }

    /// Stops mpv: SIGTERM (and SIGCONT, in case it is suspended), then SIGKILL after `timeout`
    /// seconds. Returns once it has exited and been reaped.
    public func terminate(timeout: Double = 3) async {
        guard isRunning else { return }
        kill(pid, SIGTERM)
        kill(pid, SIGCONT)
        let deadline = MonotonicClock.read() + Nanos.from(seconds: timeout)
        while isRunning {
            if MonotonicClock.read() > deadline {
                kill(pid, SIGKILL)
                _ = wait(blocking: true)
                break
            }
            try? await Task.sleep(nanoseconds: 5_000_000)
        }
        unlink(options.socketPath)
    }

    /// Reaps the process if it has exited; returns its status then.
    private func poll() -> Int32? {
        wait(blocking: false)
    }

    private func wait(blocking: Bool) -> Int32? {
        exited.withLock { known in
            if let known { return known }
            var status: Int32 = 0
            var r: pid_t
            repeat { r = waitpid(pid, &status, blocking ? 0 : WNOHANG) } while r < 0 && errno == EINTR
            guard r == pid else { return nil }
            let code = PosixSpawn.exitStatus(status)
            known = code
            return code
        }
    }

    private static func spawn(_ options: MPVOptions) throws -> MPVProcess {
        do {
            let pid = try PosixSpawn.spawn(options.arguments, environment: ProcessInfo.processInfo.environment)
            return MPVProcess(pid: pid, options: options)
        } catch {
            throw MPVError.launchFailed("\(options.executable): \(error)")
        }
    }
}
