import LockstepCore
import LockstepPeerWire
import Testing

/// `clock_result` (peer protocol §4.2b): its times are checked where it is decoded.
@Suite("Clock result codec")
struct ClockResultCodecTests {
    static func bytes(t1: Int64, t4: Int64) -> [UInt8] {
        PeerMessage.clockResult(exchange: 3, echo: -1, t1: PeerTime(ns: t1), t4: PeerTime(ns: t4)).encoded()
    }

    @Test("a result round-trips at the edges of its ranges: the reply back at once, or 10 s after the request")
    func edges() throws {
        for (t1, t4) in [(Limits.instantNs.lowerBound, Limits.instantNs.lowerBound), (0, Limits.clockResultRoundTripNs), (Limits.instantNs.upperBound, Limits.instantNs.upperBound)] {
            #expect(try PeerMessage.decode(Self.bytes(t1: t1, t4: t4)) == .clockResult(exchange: 3, echo: -1, t1: PeerTime(ns: t1), t4: PeerTime(ns: t4)))
        }
    }

    @Test("a result whose reply arrived before its request left, or more than 10 s after, or whose t1 is no instant, is refused as out of range")
    func outOfRange() {
        #expect(throws: DecodeError.self) { try PeerMessage.decode(Self.bytes(t1: 10, t4: 9)) }
        #expect(throws: DecodeError.self) { try PeerMessage.decode(Self.bytes(t1: 0, t4: Limits.clockResultRoundTripNs + 1)) }
        #expect(throws: DecodeError.self) { try PeerMessage.decode(Self.bytes(t1: .max, t4: .max)) }
        #expect(throws: DecodeError.self) { try PeerMessage.decode(Self.bytes(t1: Limits.instantNs.upperBound, t4: Limits.instantNs.upperBound + 1)) }
        #expect(throws: DecodeError.self) { try PeerMessage.decode(Array(Self.bytes(t1: 0, t4: 1).dropLast())) }
    }
}
