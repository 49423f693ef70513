/// The files the web endpoint serves (pages, the JavaScript SDK, styles), from inside the
/// binary: the .deb installs only the executables. Their sources are in
/// `Sources/LockstepWeb/Assets/`; `tools/web-assets` writes them into `EmbeddedAssets.swift`,
/// and a unit test fails when that file is stale.
public enum WebAssets {
    /// One served file.
    public struct Asset: Sendable, Equatable {
        /// Its file name in `Assets/` (also its URL path after `/`).
        public let name: String
        public let contentType: String
        public let text: String
    }

    /// Every asset, by URL path (`/` is the player page, `/dashboard` the dashboard).
    public static let byPath: [String: Asset] = {
        var table: [String: Asset] = [:]
        for (name, text) in EmbeddedAssets.files {
            let asset = Asset(name: name, contentType: contentType(of: name), text: text)
            table["/" + name] = asset
        }
        table["/"] = table["/index.html"]
        table["/dashboard"] = table["/dashboard.html"]
        return table
    }()

    /// The media type of a file name, by its extension.
    public static func contentType(of name: String) -> String {
        switch name.split(separator: ".").last {
        case "html": "text/html; charset=utf-8"
        case "js": "text/javascript; charset=utf-8"
        case "css": "text/css; charset=utf-8"
        case "svg": "image/svg+xml"
        default: "text/plain; charset=utf-8"
        }
    }
}
