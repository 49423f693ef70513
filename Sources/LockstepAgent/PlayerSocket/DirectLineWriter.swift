#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore
import Synchronization

/// Writes a client's lines into its socket from the thread that sends them (the agent's), and
/// hands the channel only what the socket does not take at once.
///
/// Through the channel, every line woke its event loop's thread before the player's: on a
/// machine running many agents, a wait in the run queue each. A line the kernel takes whole goes
/// straight in; the rest of one it takes in part, and every line after it until the channel has
/// written them all, go through the channel, so lines stay in order.
///
/// Holds a duplicate of the connection's descriptor (the channel owns and closes its own); it is
/// closed by ``close()``, or when the writer goes.
final class DirectLineWriter: Sendable {
    /// The duplicate; -1 once closed. Held while writing, so no line overtakes another.
    private let descriptor: Mutex<Int32>
    /// Lines handed to the channel and not yet written by it.
    private let viaChannel = Atomic<Int>(0)
    /// Lines handed to the channel so far (whole or in part).
    private let handedOver = Atomic<Int>(0)

    /// How many lines went (whole or in part) through the channel: the socket was full.
    var linesThroughChannel: Int { handedOver.load(ordering: .relaxed) }

    /// A writer on a duplicate of `fd`; nil if it cannot be duplicated.
    init?(duplicating fd: Int32) {
        let copy = fcntl(fd, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else { return nil }
        descriptor = Mutex(copy)
    }

    /// A writer with no descriptor: every line goes through the channel.
    init() {
        descriptor = Mutex(-1)
    }

    deinit { close() }

    /// Writes `line` now if the channel holds nothing back, else (and for what the socket did not
    /// take) through `channel`. `done` is called once the line is written or can no longer be.
    func write(_ line: ByteBuffer, channel: any Channel, done: @escaping @Sendable () -> Void) {
        var rest = line
        let direct = descriptor.withLock { fd -> Bool in
            if fd >= 0, viaChannel.load(ordering: .acquiring) == 0 {
                let n = rest.withUnsafeReadableBytes { bytes in
                    send(fd, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT) | Self.noSignal)
                }
                if n == rest.readableBytes { return true }
                if n > 0 { rest.moveReaderIndex(forwardBy: n) }
                // Otherwise full, or gone: the channel waits for room, or finds out.
            }
            // Handed over while held: a line sent after this one, from any thread, goes after it.
            viaChannel.wrappingAdd(1, ordering: .relaxed)
            handedOver.wrappingAdd(1, ordering: .relaxed)
            let written = channel.eventLoop.makePromise(of: Void.self)
            written.futureResult.whenComplete { _ in
                self.viaChannel.wrappingSubtract(1, ordering: .releasing)
                done()
            }
            channel.writeAndFlush(rest, promise: written)
            return false
        }
        if direct { done() }
    }

    /// Closes the duplicate. Safe to call twice.
    func close() {
        descriptor.withLock { fd in
            if fd >= 0 { closeDescriptor(fd) }
            fd = -1
        }
    }

    #if canImport(Glibc)
    private static let noSignal = Int32(MSG_NOSIGNAL)
    #else
    // The socket is the channel's too, and NIO sets SO_NOSIGPIPE on it.
    private static let noSignal: Int32 = 0
    #endif
}

/// `close(2)`, out of reach of the writer's own `close()`.
private func closeDescriptor(_ fd: Int32) {
    _ = close(fd)
}
