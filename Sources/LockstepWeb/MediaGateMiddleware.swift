import Hummingbird

/// Media files (`/media/…`) only for a browser ``WebAccess/media(_:)`` lets in: this machine's,
/// or a paired one.
struct MediaGateMiddleware: RouterMiddleware {
    typealias Context = WebRequestContext
    let server: WebServer

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard request.uri.path.hasPrefix("/media/") else { return try await next(request, context) }
        let access = WebAccess.Request(host: request.head.authority, peerIsLoopback: context.peerIsLoopback, paired: server.isPaired(request))
        if case .refuse(let why) = WebAccess.media(access) {
            server.counters.add("refused.media-" + why.rawValue)
            return Response(status: .forbidden)
        }
        return try await next(request, context)
    }
}
