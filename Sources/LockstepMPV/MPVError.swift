/// Why talking to mpv failed.
public enum MPVError: Error, CustomStringConvertible, Equatable {
    /// Nothing answers on the socket (mpv not running, or not with `--input-ipc-server=PATH`).
    case cannotConnect(socketPath: String, reason: String)
    /// The connection closed before the reply came (mpv quit).
    case disconnected
    /// mpv answered with an error.
    case failed(command: String, error: String)
    /// mpv could not be started, or did not answer in time.
    case launchFailed(String)

    public var description: String {
        switch self {
        case .cannotConnect(let path, let reason): "cannot connect to mpv at \(path): \(reason)"
        case .disconnected: "the connection to mpv closed (mpv quit?)"
        case .failed(let command, let error): "mpv refused \(command): \(error)"
        case .launchFailed(let why): "cannot start mpv: \(why)"
        }
    }
}
