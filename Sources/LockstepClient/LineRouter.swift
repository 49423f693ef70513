import LockstepPlayerProtocol
import NIOCore

/// Routes the agent's lines from the connection's event loop: a reply to the request waiting
/// for it, an event onto ``LockstepClient/events``.
///
/// Lines used to pass through a task of the concurrency pool that read the async channel's
/// stream and routed each: one more thread woken per line, before the player's own (docs/scale.md,
/// twenty-fourth step). Lines are not passed on: the async channel's stream only ends with the
/// connection.
final class LineRouter: ChannelInboundHandler {
    typealias InboundIn = LineFrame
    typealias InboundOut = LineFrame

    private let route: @Sendable ([UInt8]) -> Void

    init(route: @escaping @Sendable ([UInt8]) -> Void) {
        self.route = route
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // An oversized line is one no reply or event can be: dropped, as before.
        if case .line(let bytes) = unwrapInboundIn(data) { route(bytes) }
    }
}
