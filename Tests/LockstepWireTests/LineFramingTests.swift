import NIOCore
import Testing

@testable import LockstepPlayerProtocol

@Suite("Line framing")
struct LineFramingTests {
    func frames(_ chunks: [String], max: Int = 16) -> [LineFrame] {
        var decoder = LineFrameDecoder(maxLineBytes: max)
        var buffer = ByteBuffer()
        var out: [LineFrame] = []
        for c in chunks {
            buffer.writeString(c)
            while let f = decoder.next(&buffer) { out.append(f) }
        }
        return out
    }

    @Test("lines split across reads are joined; CRLF is accepted")
    func splits() {
        #expect(frames(["{\"a\"", ":1}\r\n{\"b\":2}\n"]) == [.line(Array("{\"a\":1}".utf8)), .line(Array("{\"b\":2}".utf8))])
    }

    @Test("an over-long line is reported once and skipped; the next line is read normally")
    func oversized() {
        #expect(frames([String(repeating: "x", count: 40) + "\nok\n"]) == [.oversized(bytes: 40), .line(Array("ok".utf8))])
    }

    @Test("an endless line is reported as soon as it passes the limit and never buffered whole")
    func endless() {
        var decoder = LineFrameDecoder(maxLineBytes: 16)
        var buffer = ByteBuffer()
        var reported: [LineFrame] = []
        for _ in 0..<1000 {
            buffer.writeString(String(repeating: "y", count: 10))
            while let f = decoder.next(&buffer) { reported.append(f) }
            #expect(buffer.readableBytes <= 26)
        }
        #expect(reported == [.oversized(bytes: 20)])
        buffer.writeString("\nnext\n")
        #expect(decoder.next(&buffer) == .line(Array("next".utf8)))
    }
}
