import Foundation
import LockstepPlayerProtocol
import NIOCore

/// Splits mpv's output into lines, stamps each with the host time of the read that completed
/// it, parses it and hands it to the connection.
///
///     read() ──► t = clock.now() ──────► {"request_id":3,"error":"success","data":1.5}\n{"event":"seek"}\n
///                                        └────────── reply, at t ─────────────────┘ └ event, at t ┘
final class MPVLineHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let core: MPVConnectionCore
    private let clock: any HostClock
    private var pending = ByteBuffer()
    private var framer = LineFrameDecoder(maxLineBytes: 64 << 20)
    private let decoder = JSONDecoder()

    init(core: MPVConnectionCore, clock: any HostClock) {
        self.core = core
        self.clock = clock
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let now = clock.now()
        var bytes = unwrapInboundIn(data)
        pending.writeBuffer(&bytes)
        while let frame = framer.next(&pending) {
            guard case .line(let line) = frame else { continue }
            if let object = try? decoder.decode([String: MPVValue].self, from: Data(line)) {
                core.deliver(object, receivedAt: now)
            }
        }
        if pending.readerIndex > 65536 { pending.discardReadBytes() }
    }

    func channelInactive(context: ChannelHandlerContext) {
        core.finish()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
