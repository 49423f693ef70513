#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HTTPTypes
import LockstepCore
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// `lockstepd --web`: serves the embedded pages and SDK, media files (`--web-media`), pairing,
/// and the WebSocket that relays a browser to the agent's player socket. A `Service`: it runs
/// beside the agent in `lockstepd`'s service group and stops with it.
public struct WebServer: Service {
    public let configuration: WebConfiguration
    let logger: Logger
    let onListening: @Sendable (Int) -> Void
    /// Refusals and sessions, by name.
    public let counters = WebCounters()
    // A class: the server's copies (in closures) share one pairing state.
    private let box: PairingBox

    /// `onListening` gets the bound port (useful with port 0).
    public init(configuration: WebConfiguration, logger: Logger, onListening: @escaping @Sendable (Int) -> Void = { _ in }) {
        self.configuration = configuration
        self.logger = logger
        self.onListening = onListening
        self.box = PairingBox(code: Self.randomCode())
    }

    public func run() async throws {
        let app = Application(
            router: makeRouter(),
            server: .http1WebSocketUpgrade(configuration: HTTP1WebSocketUpgradeChannel.Configuration(ws: .init(maxFrameSize: RelayGate.maxFrameBytes))) { request, channel, _ in
                try upgrade(request, channel)
            },
            configuration: .init(address: .hostname(configuration.endpoint.host, port: configuration.endpoint.port), serverName: "lockstepd"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? configuration.endpoint.port
                logger.notice("web: serving the player and the dashboard", metadata: [
                    "web.url": "http://\(WebEndpoint(host: configuration.endpoint.host, port: port))/", "web.dashboard": "/dashboard",
                ])
                publishCode(box.code)
                onListening(port)
            },
            logger: logger
        )
        try await app.run()
    }

    /// The pairing code a browser must send now.
    public var currentCode: String { box.code }

    // MARK: WebSocket

    func upgrade(_ request: HTTPRequest, _ channel: any Channel) throws -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>> {
        guard request.path?.split(separator: "?").first == "/ws" else { return .dontUpgrade }
        let access = WebAccess.Request(
            origin: request.headerFields[.origin], host: request.authority,
            peerIsLoopback: channel.remoteAddress?.ipAddress.map(WebEndpoint.isLoopback) ?? false,
            paired: box.isValid(token: Self.sessionToken(request.headerFields[values: .cookie])))
        if case .refuse(let why) = WebAccess.webSocket(access) {
            let n = counters.add("refused." + why.rawValue)
            logger.notice("web: WebSocket refused", metadata: [
                "web.reason": "\(why.rawValue)", "web.origin": "\(access.origin?.prefix(80) ?? "none")", "web.refusals": "\(n)",
            ])
            // hummingbird-websocket answers a refused upgrade with 400 Bad Request (fixed in the
            // library); the counter and the log line say why.
            return .dontUpgrade
        }
        let socketPath = configuration.socketPath, counters = self.counters, logger = self.logger
        return .upgrade([:]) { inbound, outbound, _ in
            try await PlayerSocketRelay.run(inbound: inbound, outbound: outbound, socketPath: socketPath, counters: counters, logger: logger)
        }
    }

    // MARK: HTTP

    func makeRouter() -> Router<WebRequestContext> {
        let router = Router(context: WebRequestContext.self)
        router.add(middleware: SecurityHeadersMiddleware())
        if let media = configuration.mediaDirectory {
            router.add(middleware: MediaGateMiddleware(server: self))
            router.add(middleware: FileMiddleware(media, urlBasePath: "/media", searchForIndexHtml: false, logger: logger))
        }
        for (path, asset) in WebAssets.byPath {
            router.get(RouterPath(path)) { _, _ in
                Response(status: .ok, headers: [.contentType: asset.contentType, .cacheControl: "no-cache"], body: .init(byteBuffer: ByteBuffer(string: asset.text)))
            }
        }
        // A plain GET of /ws (not an upgrade).
        router.get("/ws") { _, _ in Response(status: .forbidden, headers: [.contentType: "text/plain"], body: .init(byteBuffer: ByteBuffer(string: "refused\n"))) }
        router.post("/pair") { request, context in try await pair(request, context) }
        router.get("/counters") { request, context in
            guard context.peerIsLoopback else { return Response(status: .forbidden) }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let data = try encoder.encode(counters.snapshot)
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
        }
        return router
    }

    /// `POST /pair` with the code as the body: sets the session cookie on success.
    func pair(_ request: Request, _ context: WebRequestContext) async throws -> Response {
        // Same-origin only, like the WebSocket: another site cannot spend this device's tries.
        guard let origin = request.headers[.origin], let host = request.head.authority, origin.lowercased() == "http://" + host.lowercased() else {
            counters.add("refused.foreign-origin")
            return Response(status: .forbidden)
        }
        let body = try await request.body.collect(upTo: 64)
        let attempt = String(buffer: body).trimmed()
        let outcome = box.attempt(attempt, newToken: Self.randomToken(), nextCode: Self.randomCode())
        func answer(_ status: HTTPResponse.Status, _ text: String) -> Response {
            Response(status: status, headers: [.contentType: "text/plain; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: text + "\n")))
        }
        switch outcome {
        case .paired(let token):
            counters.add("paired")
            logger.notice("web: a browser paired", metadata: ["web.peer": "\(context.remoteAddress?.ipAddress ?? "?")"])
            publishCode(box.code)
            var response = answer(.ok, "paired")
            response.setCookie(Cookie(name: Self.cookieName, value: token, path: "/", httpOnly: true, sameSite: .strict))
            return response
        case .wrongCode(let left):
            counters.add("pairing.wrong-code")
            return answer(.forbidden, "wrong code (\(left) tries left on it)")
        case .codeReplaced:
            counters.add("pairing.wrong-code")
            publishCode(box.code)
            return answer(.forbidden, "wrong code; the agent shows a new one")
        case .closed:
            counters.add("pairing.closed")
            return answer(.forbidden, "pairing is closed after too many wrong codes: restart the agent")
        case .notACode:
            return answer(.badRequest, "a code is \(WebPairing.codeLength) digits")
        }
    }

    /// Logs the code and writes it to the code file.
    func publishCode(_ code: String) {
        logger.notice("web: pairing code for browsers on other devices", metadata: ["web.code": "\(code)"])
        guard let path = configuration.codeFile else { return }
        let temporary = path + ".tmp"
        _ = FileManager.default.createFile(atPath: temporary, contents: Data((code + "\n").utf8), attributes: [.posixPermissions: 0o600])
        _ = rename(temporary, path)
    }

    static let cookieName = "lockstep_session"

    static func sessionToken(_ cookieHeaders: [String]) -> String? {
        Cookies(from: cookieHeaders)[cookieName]?.value
    }

    static func randomCode() -> String {
        var g = SystemRandomNumberGenerator()
        return Digits.padded(Int.random(in: 0..<1_000_000, using: &g), width: 6)
    }

    static func randomToken() -> String {
        var g = SystemRandomNumberGenerator()
        return (0..<4).map { _ in Digits.padded(UInt32.random(in: 0...UInt32.max, using: &g), radix: 16, width: 8) }.joined()
    }

    /// Whether a request carries a session of this agent.
    func isPaired(_ request: Request) -> Bool {
        box.isValid(token: Self.sessionToken(request.headers[values: .cookie]))
    }
}

/// The pairing state, shared by the server's copies.
final class PairingBox: Sendable {
    private let state: Mutex<WebPairing>
    init(code: String) { state = Mutex(WebPairing(code: code)) }
    var code: String { state.withLock { $0.code } }
    func isValid(token: String?) -> Bool { state.withLock { $0.isValid(token: token) } }
    func attempt(_ code: String, newToken: String, nextCode: String) -> WebPairing.Outcome {
        state.withLock { $0.onAttempt(code, newToken: newToken, nextCode: nextCode) }
    }
}
