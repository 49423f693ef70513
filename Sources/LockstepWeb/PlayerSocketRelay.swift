import HummingbirdWebSocket
import LockstepPlayerProtocol
import Logging
import NIOCore
import NIOPosix

/// Relays one browser WebSocket to the agent's player socket: each text frame the browser
/// sends is one line to the agent (after ``RelayGate``), each line from the agent one text frame
/// back. The time service is answered here, without the agent. Ends when either side closes.
enum PlayerSocketRelay {
    /// The longest line taken from the agent (a `state` of a busy group is a few kB).
    static let maxAgentLineBytes = 1 << 20

    static func run(
        inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, socketPath: String, counters: WebCounters, logger: Logger
    ) async throws {
        let agent: NIOAsyncChannel<LineFrame, ByteBuffer>
        do {
            agent = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(unixDomainSocketPath: socketPath) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineFrameDecoder(maxLineBytes: maxAgentLineBytes)))
                    return try NIOAsyncChannel<LineFrame, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        } catch {
            counters.add("agent-unreachable")
            logger.warning("web: cannot reach the agent's socket", metadata: ["socket": "\(socketPath)", "error": "\(error)"])
            try await outbound.close(.unexpectedServerError, reason: "agent not reachable")
            return
        }
        counters.add("sessions")
        let gate = RelayGate()
        try await agent.executeThenClose { fromAgent, toAgent in
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask {
                    for try await frame in fromAgent {
                        guard case .line(let bytes) = frame else { continue }
                        try await outbound.write(.text(String(decoding: bytes, as: UTF8.self)))
                    }
                }
                tasks.addTask {
                    for try await message in inbound.messages(maxSize: RelayGate.maxFrameBytes) {
                        let received = MonotonicClock.read()
                        guard case .text(let text) = message else {
                            counters.add("frames-refused")
                            try await outbound.write(.text(RelayGate.error(nil, "malformed", "send text frames")))
                            continue
                        }
                        switch gate.onFrame(text) {
                        case .time(let exchange):
                            try await outbound.write(.text(exchange.reply(t2: received, t3: MonotonicClock.read())))
                        case .forward(let line):
                            try await toAgent.write(ByteBuffer(string: line + "\n"))
                        case .refuse(let line):
                            counters.add("frames-refused")
                            try await outbound.write(.text(line))
                        }
                    }
                }
                // Either side ending ends the session.
                try await tasks.next()
                tasks.cancelAll()
            }
        }
    }
}
