import Foundation
import LockstepCore
import NIOCore
import Testing

@testable import LockstepPlayerProtocol
import LockstepPeerWire

/// What the fuzzers (`tools/fuzz`, `Sources/LockstepFuzz`) found, kept as inputs in
/// `Protocol/vectors/fuzz/TARGET/` (the fuzzers start from them too), and what the decoders must
/// do with them. An input is in the fuzz target's format: for `peer`, a message's plaintext; for
/// `player`, a limit byte (high bit set: 8 × (1 + low bits)), a chunking byte, then the stream.
@Suite("Fuzz regressions")
struct FuzzRegressionTests {
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Protocol/vectors/fuzz")

    static func inputs(_ target: String) throws -> [(name: String, bytes: [UInt8])] {
        let dir = directory.appendingPathComponent(target)
        return try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted().map {
            ($0, Array(try Data(contentsOf: dir.appendingPathComponent($0))))
        }
    }

    static func input(_ target: String, _ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: directory.appendingPathComponent(target).appendingPathComponent(name)))
    }

    // MARK: - Peer messages

    @Test("a digest whose flags byte has undefined bits is refused, not read as its defined bits")
    func digestUndefinedFlagBits() throws {
        let bytes = try Self.input("peer", "digest-undefined-flag-bits.bin")
        #expect(bytes == [0x13, 0x31, 0, 0])
        #expect(throws: DecodeError.invalid(field: "flags")) { try PeerMessage.decode(bytes) }
        #expect(try PeerMessage.decode([0x13, 0x01] + Array(repeating: 0, count: 9)) == .digest(GroupDigest(entries: [], fingerprint: 0), wantsReply: true))
    }

    @Test("a command's reason `waiting: R` with R longer than a suspension reason (32 bytes) is refused, not cut short")
    func waitingReasonTooLong() throws {
        let bytes = try Self.input("peer", "operation-waiting-reason-too-long.bin")
        #expect(throws: DecodeError.tooLong(field: "reason.waiting", limit: PlayerStatus.maxReasonBytes)) { try PeerMessage.decode(bytes) }
    }

    static let flagged: [PeerMessage] = {
        let stamp = Stamp(time: 3, origin: PeerID(high: 1, low: 2), incarnation: 1, seq: 3)
        let item = ItemID("file:///film.mkv")!
        let paused = Timeline(phase: .paused, anchorTime: PeerTime(ns: 5), position: MediaPosition(clamping: 6), rate: 1)
        let record = ItemRecord(item: item, timeline: paused, clock: stamp.origin, action: .pause, stamp: stamp)
        let op = GroupOperation(stamp: stamp, heads: [], item: item, command: .pause, basis: stamp.origin, at: PeerTime(ns: 5), originAt: PeerTime(ns: 5))
        return [
            .hello(name: "den", wantsReply: true),
            .operation(op, wantsAck: true),
            .itemRegister(record),
            .currentRegister(CurrentRecord(item: item, stamp: stamp)),
            .digest(GroupDigest(entries: [], fingerprint: 1), wantsReply: true),
            .participantDigest([], wantsReply: true),
        ]
    }()

    @Test("every message with a flags byte refuses each undefined bit", arguments: flagged)
    func undefinedFlagBits(_ message: PeerMessage) throws {
        let bytes = message.encoded()
        #expect(try PeerMessage.decode(bytes) == message)
        // A participant digest's bits 1 and 2 say its range (peer protocol §4.9).
        let defined: UInt8 = if case .participantDigest = message { 7 } else { 1 }
        for bit in 0..<8 where defined & (1 << bit) == 0 {
            var bad = bytes
            bad[1] |= 1 << bit
            #expect(throws: DecodeError.invalid(field: "flags")) { try PeerMessage.decode(bad) }
        }
    }

    @Test("every kept peer input is refused, or decodes to a message that re-encodes to the same bytes")
    func keptPeerInputs() throws {
        for (name, bytes) in try Self.inputs("peer") {
            guard let message = try? PeerMessage.decode(bytes) else { continue }
            #expect(message.encoded() == bytes, "\(name)")
        }
    }

    // MARK: - Player socket

    func frames(_ chunks: [[UInt8]], max: Int) -> (frames: [LineFrame], held: Int) {
        var decoder = LineFrameDecoder(maxLineBytes: max)
        var buffer = ByteBuffer()
        var out: [LineFrame] = []
        for c in chunks {
            buffer.writeBytes(c)
            while let f = decoder.next(&buffer) { out.append(f) }
        }
        return (out, buffer.readableBytes)
    }

    @Test("a line exactly at the limit ending in \\r\\n is a line: the \\r does not count against the limit")
    func crlfLineAtTheLimit() throws {
        let input = try Self.input("player", "crlf-line-at-the-limit.bin")
        #expect(input[0] == 0x81)  // a limit of 16 bytes
        let stream = Array(input.dropFirst(2))
        let line = Array(#"{"type":"peers"}"#.utf8)
        #expect(line.count == 16)
        #expect(frames([stream], max: 16).frames == [.line(line)])
        // The \r arriving in a read of its own, before the \n: held, not reported.
        let held = frames([line + [0x0d]], max: 16)
        #expect(held.frames == [] && held.held == 17)
        #expect(frames([line + [0x0d], [0x0a]], max: 16).frames == [.line(line)])
        // One byte more is over the limit, with or without the \r, read whole or in pieces.
        #expect(frames([[0x20] + line + [0x0d, 0x0a]], max: 16).frames == [.oversized(bytes: 18)])
        #expect(frames([[0x20] + line, [0x0d, 0x0a]], max: 16).frames == [.oversized(bytes: 17)])
        #expect(frames([[0x20] + line + [0x0a]], max: 16).frames == [.oversized(bytes: 17)])
        #expect(try PlayerJSON.decode(RequestHeader.self, from: line).type == "peers")
    }

    @Test("every kept player input frames and parses without trapping")
    func keptPlayerInputs() throws {
        for (_, input) in try Self.inputs("player") where input.count >= 2 {
            let max = input[0] & 0x80 == 0 ? PlayerProtocol.maxLineBytes : 8 * (1 + Int(input[0] & 0x7f))
            for case .line(let line) in frames([Array(input.dropFirst(2))], max: max).frames {
                _ = try? PlayerJSON.decode(RequestHeader.self, from: line)
                _ = try? PlayerJSON.decode(HelloRequest.self, from: line)
            }
        }
    }
}
