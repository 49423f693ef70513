#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Paths of the agent's files: the folder a path is in (what `NSString.deletingLastPathComponent`
/// did), and making the folders of a path (`mkdir -p`), without full Foundation, which the agent
/// does not link.
enum PathNames {
    /// The folder `path` is in: `/run/lockstep` for `/run/lockstep/agent.sock`, `/` for `/x`,
    /// `""` for a bare name. Trailing slashes do not count as a component.
    static func parent(of path: String) -> String {
        var path = Substring(path)
        while path.count > 1, path.hasSuffix("/") { path = path.dropLast() }
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// `mkdir -p`: each missing folder of `path`, made with `mode` (the umask narrows it, as for
    /// any `mkdir`). Nil when all exist now; else the folder that could not be made and why.
    static func makeFolders(_ path: String, mode: mode_t) -> (folder: String, reason: String)? {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for part in path.split(separator: "/") {
            prefix += part
            if mkdir(prefix, mode) != 0 {
                let e = errno
                guard e == EEXIST else { return (prefix, String(cString: strerror(e))) }
            }
            prefix += "/"
        }
        return nil
    }
}
