import LockstepPlayerProtocol
import NIOCore
import Synchronization

/// Hands a connection's lines to the ``ClientHandler`` from the channel's event loop, in the
/// order they arrive, without a task in between.
///
/// Lines used to go from the event loop to a task of the concurrency pool, which awaited the
/// agent for each: three threads woken per line (the event loop, the pool, the agent's), and a
/// playing player reports its position ten times a second. Now the agent gets each line as a job
/// on its own thread: an agent with one playing player uses about a third less CPU and half the
/// context switches (docs/scale.md, twenty-fourth step).
///
/// Lines wait here until the connection is ``attach(_:)``ed (the server has counted and
/// admitted it, and told the handler); while ``maxWaiting`` lines are waiting here or in the
/// handler, the socket is not read, so a client that floods holds the kernel's buffer, not the
/// agent's memory.
final class ClientLines: ChannelDuplexHandler {
    typealias InboundIn = LineFrame
    typealias InboundOut = LineFrame
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// Lines taken from the socket and not yet handled, at most (then reading stops).
    static let maxWaiting = 64

    /// What the event loop and the handler's thread share.
    private final class Credit: Sendable {
        /// Lines read and not yet handled.
        let waiting = Atomic<Int>(0)
        /// A read was held back because too many lines were waiting.
        let held = Atomic<Bool>(false)

        /// One line handled, on any thread; true when this lets a held read go (the caller reads).
        func handled() -> Bool {
            let left = waiting.wrappingSubtract(1, ordering: .sequentiallyConsistent).newValue
            return left < ClientLines.maxWaiting && held.exchange(false, ordering: .sequentiallyConsistent)
        }
    }

    private let handler: any ClientHandler
    private let credit = Credit()
    private var client: ClientConnection?
    private var early: [LineFrame] = []
    private var context: ChannelHandlerContext?

    init(handler: any ClientHandler) {
        self.handler = handler
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    /// The server admitted the connection as `client`: lines go to the handler from now on,
    /// the ones that came first included. On the event loop.
    func attach(_ client: ClientConnection) {
        self.client = client
        let first = early
        early = []
        for frame in first { deliver(frame, from: client) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        credit.waiting.wrappingAdd(1, ordering: .relaxed)
        if let client {
            deliver(frame, from: client)
        } else {
            early.append(frame)
        }
    }

    func read(context: ChannelHandlerContext) {
        // Held first, then checked: a line handled in between either sees `held` or is counted.
        credit.held.store(true, ordering: .sequentiallyConsistent)
        guard credit.waiting.load(ordering: .sequentiallyConsistent) < Self.maxWaiting else { return }
        if credit.held.exchange(false, ordering: .sequentiallyConsistent) { context.read() }
    }

    private func deliver(_ frame: LineFrame, from client: ClientConnection) {
        client.onSpoke()
        guard !client.isClosed else { return lineHandled() }
        switch frame {
        case .line(let bytes):
            if bytes.isEmpty { return lineHandled() }
            let credit = credit, channel = context?.channel
            handler.receive(line: bytes, from: client) {
                if credit.handled() { channel?.read() }
            }
        case .oversized(let n):
            client.noteBadInput("oversized line")
            client.send(error: ProtocolError(.oversized, "line of \(n)+ bytes is longer than \(PlayerProtocol.maxLineBytes); dropped"), requestID: nil)
            lineHandled()
        }
    }

    /// A line that needed no handler, on the event loop.
    private func lineHandled() {
        if credit.handled() { context?.read() }
    }
}
