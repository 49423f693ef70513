import LockstepCore
import LockstepPlayerProtocol
import NIOCore

/// The player socket's input path: `LineFrameDecoder`, then each line as `RequestHeader` and as
/// every request in ``playerRequests``.
///
///     input: limit(1) chunking(1) stream...
///     limit: high bit clear = the protocol's limit; set = 8 × (1 + low 7 bits), to reach oversized lines
///     chunking: 0 = the stream in one read; otherwise reads of 1...64 bytes, from a generator seeded by it
///
/// Properties: the frames are those of a model of the protocol (split at `\n`, a trailing `\r`
/// dropped, a line longer than the limit reported once as oversized and skipped, as soon as it
/// is known to be too long) whatever the reads; the decoder never holds more than a line's worth
/// of bytes; decoding a line gives a
/// value or a `ProtocolError`, and a request that decodes survives a round trip.
enum PlayerTarget {
    static func run(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        let limitByte = input.byte()
        let maxLine = limitByte & 0x80 == 0 ? PlayerProtocol.maxLineBytes : 8 * (1 + Int(limitByte & 0x7f))
        let chunking = input.byte()
        let stream = input.rest()

        var decoder = LineFrameDecoder(maxLineBytes: maxLine)
        var buffer = ByteBuffer()
        var frames: [LineFrame] = []
        var generator = UInt32(chunking)
        var offset = 0
        while offset < stream.count {
            var n = stream.count - offset
            if chunking != 0 {
                generator = generator &* 1_664_525 &+ 1_013_904_223
                n = min(n, 1 + Int(generator >> 26))
            }
            buffer.writeBytes(stream[offset..<offset + n])
            offset += n
            while let frame = decoder.next(&buffer) { frames.append(frame) }
            require(buffer.readableBytes <= maxLine + 1, "player: the decoder holds \(buffer.readableBytes) bytes with a limit of \(maxLine)")
        }

        let expected = model(stream, maxLine: maxLine)
        require(frames.count == expected.count, "player: \(frames.count) frames, the model has \(expected.count) (limit \(maxLine))\n  got:      \(frames)\n  expected: \(expected)")
        for (got, want) in zip(frames, expected) {
            switch (got, want) {
            case (.line(let a), .line(let b)):
                require(a == b, "player: line \(hex(a)), the model has \(hex(b))")
            case (.oversized(let n), .oversized(let length)):
                // Reported as soon as the limit is passed: somewhere between the limit and the whole line.
                require(n > maxLine && n <= length, "player: oversized(\(n)) for a line of \(length) bytes, limit \(maxLine)")
            default:
                fatalError("player: frame \(got), the model has \(want) (limit \(maxLine))")
            }
        }
        for case .line(let line) in frames { parse(line) }
    }

    /// The frames the protocol document describes for `stream`: one per complete line, and an
    /// oversized report for an incomplete last line that is already too long whatever follows.
    static func model(_ stream: [UInt8], maxLine: Int) -> [LineFrame] {
        let cr = UInt8(ascii: "\r")
        var out: [LineFrame] = []
        var start = 0
        for (i, b) in stream.enumerated() where b == UInt8(ascii: "\n") {
            var line = Array(stream[start..<i])
            let length = line.count
            if line.last == cr { line.removeLast() }
            out.append(line.count > maxLine ? .oversized(bytes: length) : .line(line))
            start = i + 1
        }
        let partial = stream.count - start
        if partial > maxLine + 1 || (partial == maxLine + 1 && stream.last != cr) {
            out.append(.oversized(bytes: partial))
        }
        return out
    }

    /// What the agent does with a line (`Agent.handle(line:from:)`), minus the replies. The
    /// scanned header (``JSONLineHead``) must be the decoded one whenever the scan answers.
    static func parse(_ line: [UInt8]) {
        let scanned = RequestHeader(scanning: line)
        let header: RequestHeader
        do {
            header = try PlayerJSON.decode(RequestHeader.self, from: line)
        } catch {
            require(!error.message.isEmpty, "player: an error without a message")
            require(scanned == nil, "player: a header was scanned from a line the decoder refuses (\(error.message))")
            return
        }
        if let scanned {
            require(scanned.type == header.type && scanned.requestID == header.requestID, "player: the scanned header differs from the decoded one")
        }
        require(header.type.truncated(toUTF8: 64).utf8.count <= 64, "player: truncated(toUTF8:) went over its limit")
        if case .string(let s) = header.requestID { require(s.utf8.count <= 128, "player: a request_id of \(s.utf8.count) bytes was accepted") }
        for kind in playerRequests { kind.check(line) }
    }

    static var seeds: [(name: String, bytes: [UInt8])] {
        var out: [(name: String, bytes: [UInt8])] = []
        let nl = UInt8(ascii: "\n")
        var all: [UInt8] = []
        for kind in playerRequests {
            for (i, line) in kind.examples().enumerated() {
                out.append(("\(kind.type)-\(i + 1)", [0, 0] + line + [nl]))
                all += line + [nl]
            }
        }
        out.append(("all-in-one-read", [0, 0] + all))
        out.append(("all-in-small-reads", [0, 7] + all))
        out.append(("crlf-and-partial", [0, 3] + Array("{\"type\":\"status\",\"request_id\":\"a\"}\r\n{\"type\":\"peers\"}\n{\"type\":\"clo".utf8)))
        out.append(("oversized", [0x81, 5] + Array(repeating: UInt8(ascii: "x"), count: 40) + Array("\n{\"type\":\"clock\"}\n".utf8)))
        out.append(("not-json", [0, 0] + Array("hello\n[1,2]\n{\"type\":3}\n{\"request_id\":1.5,\"type\":\"x\"}\n".utf8)))
        return out
    }

    static var dictionary: [[UInt8]] {
        var tokens: Set<[UInt8]> = []
        for kind in playerRequests {
            tokens.insert(Array("\"\(kind.type)\"".utf8))
            for line in kind.examples() {
                // Every quoted key and string value of the examples.
                var i = 0
                while let open = line[i...].firstIndex(of: UInt8(ascii: "\"")), let close = line[(open + 1)...].firstIndex(of: UInt8(ascii: "\"")) {
                    tokens.insert(Array(line[open...close]))
                    i = close + 1
                }
            }
        }
        for t in ["{", "}", "[", "]", ":", ",", "null", "true", "false", "-1", "1e999", "0.0625", "\\u0000", "\\ud800", "\r\n"] {
            tokens.insert(Array(t.utf8))
        }
        return tokens.sorted { $0.lexicographicallyPrecedes($1) }
    }
}
