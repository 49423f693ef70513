import NIOCore

/// Splits a byte stream into lines for the player socket (one JSON object per line).
///
///     {"type":"hello",...}\n{"type":"ready"}\n
///     └──────── line ───────┘ └── line ──┘
///
/// A line longer than `maxLineBytes` is never buffered whole: the decoder reports it once as
/// ``LineFrame/oversized(bytes:)`` as soon as the limit is passed, then discards bytes until the
/// next newline, so a client that sends an endless line costs at most `maxLineBytes` of memory
/// (plus a `\r`). `\r\n` endings are accepted; the `\r` does not count against the limit.
public struct LineFrameDecoder: ByteToMessageDecoder {
    public typealias InboundOut = LineFrame

    public let maxLineBytes: Int
    private var discarding = false

    public init(maxLineBytes: Int) {
        self.maxLineBytes = maxLineBytes
    }

    public mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let frame = next(&buffer) else { return .needMoreData }
        context.fireChannelRead(Self.wrapInboundOut(frame))
        return .continue
    }

    public mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        if let frame = next(&buffer) {
            context.fireChannelRead(Self.wrapInboundOut(frame))
            return .continue
        }
        // A last line without a newline still counts: a client may close right after writing.
        if buffer.readableBytes > 0 && !discarding {
            let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
            context.fireChannelRead(Self.wrapInboundOut(.line(bytes)))
        }
        return .needMoreData
    }

    /// The next complete frame in `buffer`, consuming it; nil if more bytes are needed.
    public mutating func next(_ buffer: inout ByteBuffer) -> LineFrame? {
        while true {
            let view = buffer.readableBytesView
            guard let nl = view.firstIndex(of: UInt8(ascii: "\n")) else {
                if discarding {
                    buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
                    buffer.discardReadBytes()
                } else if buffer.readableBytes - (view.last == UInt8(ascii: "\r") ? 1 : 0) > maxLineBytes {
                    // Report at once, then drop the rest of the line as it arrives.
                    discarding = true
                    let seen = buffer.readableBytes
                    buffer.moveReaderIndex(forwardBy: seen)
                    buffer.discardReadBytes()
                    return .oversized(bytes: seen)
                }
                return nil
            }
            let length = nl - view.startIndex
            if discarding {
                buffer.moveReaderIndex(forwardBy: length + 1)
                discarding = false
                continue
            }
            if length - (length > 0 && view[nl - 1] == UInt8(ascii: "\r") ? 1 : 0) > maxLineBytes {
                buffer.moveReaderIndex(forwardBy: length + 1)
                return .oversized(bytes: length)
            }
            var line = buffer.readBytes(length: length) ?? []
            buffer.moveReaderIndex(forwardBy: 1)
            if line.last == UInt8(ascii: "\r") { line.removeLast() }
            return .line(line)
        }
    }
}

/// One unit read from the player socket.
public enum LineFrame: Equatable, Sendable {
    /// A complete line without its newline.
    case line([UInt8])
    /// A line that exceeded the limit and was dropped (its length in bytes, as far as it was read).
    case oversized(bytes: Int)
}
