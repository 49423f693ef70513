/// The web endpoint's access rules, as pure decisions (the server asks, the tests check).
///
/// - Pages, the SDK and styles are public: they hold no data and nothing to control.
/// - The WebSocket (the player socket relay) needs an `Origin` equal to the page's own origin
///   (`http://` + the `Host` it asked for): a page from another site never gets a socket, even
///   from a browser on this machine.
/// - A browser on this machine (loopback peer) that asked for a loopback name needs nothing more.
///   Any other needs a session from pairing (a one-time code shown on the agent). A loopback peer
///   that asked for another name is treated as remote: that is how DNS rebinding looks.
/// - Media files follow the WebSocket's rule without the Origin check (`<video>` sends none).
public enum WebAccess {
    /// Why a request was refused (also the label of its counter).
    public enum Refusal: String, Sendable, Equatable, CaseIterable {
        /// No `Origin` header on a WebSocket upgrade (not a browser page of ours).
        case missingOrigin = "missing-origin"
        /// `Origin` is another site than the page's own.
        case foreignOrigin = "foreign-origin"
        /// Not paired: a remote browser (or a foreign name) without a valid session.
        case notPaired = "not-paired"
    }

    /// The outcome: go ahead, or refuse with a reason.
    public enum Decision: Sendable, Equatable {
        case allow
        case refuse(Refusal)
    }

    /// What the rules look at in a request.
    public struct Request: Sendable, Equatable {
        /// The `Origin` header, if any.
        public var origin: String?
        /// The `Host` header (`name:port`), if any.
        public var host: String?
        /// Whether the TCP peer is on the loopback interface.
        public var peerIsLoopback: Bool
        /// Whether the request carries a valid session token.
        public var paired: Bool

        public init(origin: String? = nil, host: String?, peerIsLoopback: Bool, paired: Bool) {
            self.origin = origin
            self.host = host
            self.peerIsLoopback = peerIsLoopback
            self.paired = paired
        }
    }

    /// May this request upgrade to the WebSocket?
    public static func webSocket(_ r: Request) -> Decision {
        guard let origin = r.origin, !origin.isEmpty else { return .refuse(.missingOrigin) }
        guard let host = r.host, origin.lowercased() == "http://" + host.lowercased() else { return .refuse(.foreignOrigin) }
        return trusted(r) ? .allow : .refuse(.notPaired)
    }

    /// May this request read a media file?
    public static func media(_ r: Request) -> Decision {
        trusted(r) ? .allow : .refuse(.notPaired)
    }

    /// Local (loopback peer asking for a loopback name) or paired.
    static func trusted(_ r: Request) -> Bool {
        if r.paired { return true }
        guard r.peerIsLoopback, let host = r.host else { return false }
        return WebEndpoint.isLoopback(hostName(host))
    }

    /// The name part of a `Host` header: `127.0.0.1:8080` → `127.0.0.1`, `[::1]:8080` → `::1`.
    public static func hostName(_ host: String) -> String {
        if host.hasPrefix("["), let close = host.firstIndex(of: "]") {
            return String(host[host.index(after: host.startIndex)..<close])
        }
        if let colon = host.lastIndex(of: ":"), !host[..<colon].contains(":") {
            return String(host[..<colon])
        }
        return host
    }
}
