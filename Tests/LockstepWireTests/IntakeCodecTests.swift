import LockstepCore
import LockstepPeerWire
import Testing

/// `intake` (peer protocol §4.11b): a peer's number, checked where it is decoded.
@Suite("Intake codec")
struct IntakeCodecTests {
    /// The message as a peer could send it: the type, then any i64.
    static func bytes(_ ns: Int64) -> [UInt8] {
        [MessageType.intake.rawValue] + (0..<8).reversed().map { UInt8(truncatingIfNeeded: UInt64(bitPattern: ns) >> (8 * UInt64($0))) }
    }

    @Test("an intake round-trips at the edges of its range, none and 2 s")
    func edges() throws {
        for ns in [Limits.intakeNs.lowerBound, 42_000_000, Limits.intakeNs.upperBound] {
            #expect(try PeerMessage.decode(Self.bytes(ns)) == .intake(.nanoseconds(ns)))
            #expect(PeerMessage.intake(.nanoseconds(ns)).encoded() == Self.bytes(ns))
        }
    }

    @Test("a negative intake, one over 2 s, a short one and one with a byte after it are refused")
    func refused() {
        for ns in [-1, Limits.intakeNs.upperBound + 1, .max, .min] {
            #expect(throws: DecodeError.self) { try PeerMessage.decode(Self.bytes(ns)) }
        }
        #expect(throws: DecodeError.self) { try PeerMessage.decode(Array(Self.bytes(5).dropLast())) }
        #expect(throws: DecodeError.self) { try PeerMessage.decode(Self.bytes(5) + [0]) }
    }

    @Test("the encoder writes nothing the decoder refuses: a span past the range goes as its end")
    func encoderClamps() throws {
        #expect(try PeerMessage.decode(PeerMessage.intake(.seconds(5)).encoded()) == .intake(.nanoseconds(Limits.intakeNs.upperBound)))
        #expect(try PeerMessage.decode(PeerMessage.intake(.nanoseconds(-3)).encoded()) == .intake(.zero))
    }
}
