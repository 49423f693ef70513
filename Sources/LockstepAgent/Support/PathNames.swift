/// File paths as text, for what `NSString.deletingLastPathComponent` did (full Foundation, which
/// the agent does not link).
enum PathNames {
    /// The folder `path` is in: `/run/lockstep` for `/run/lockstep/agent.sock`, `/` for `/x`,
    /// `""` for a bare name. Trailing slashes do not count as a component.
    static func parent(of path: String) -> String {
        var path = Substring(path)
        while path.count > 1, path.hasSuffix("/") { path = path.dropLast() }
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
