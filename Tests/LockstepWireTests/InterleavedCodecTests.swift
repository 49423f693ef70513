import LockstepCore
import LockstepPeerWire
import Testing

/// `interleaved_request` and `interleaved_reply` (peer protocol §4.2c): the parts they carry are
/// checked where they are decoded, with the ranges of `clock_result` and `clock_follow_up`.
@Suite("Interleaved exchange codec")
struct InterleavedCodecTests {
    static func request(t1: Int64, t4: Int64) -> [UInt8] {
        PeerMessage.interleavedRequest(exchange: 8, t1: PeerTime(ns: 0), result: ExchangeResult(exchange: 7, echo: -1, t1: PeerTime(ns: t1), t4: PeerTime(ns: t4))).encoded()
    }

    static func reply(t3: Int64) -> [UInt8] {
        PeerMessage.interleavedReply(exchange: 8, echo: 1, t2: PeerTime(ns: 0), t3: PeerTime(ns: 0), followUp: ClockFollowUp(exchange: 7, echo: .min, t3: PeerTime(ns: t3))).encoded()
    }

    @Test("the carried parts round-trip at the edges of their ranges")
    func edges() throws {
        for (t1, t4) in [(Limits.instantNs.lowerBound, Limits.instantNs.lowerBound), (0, Limits.clockResultRoundTripNs), (Limits.instantNs.upperBound, Limits.instantNs.upperBound)] {
            #expect(try PeerMessage.decode(Self.request(t1: t1, t4: t4))
                == .interleavedRequest(exchange: 8, t1: PeerTime(ns: 0), result: ExchangeResult(exchange: 7, echo: -1, t1: PeerTime(ns: t1), t4: PeerTime(ns: t4))))
        }
        for t3 in [Limits.instantNs.lowerBound, Limits.instantNs.upperBound] {
            #expect(try PeerMessage.decode(Self.reply(t3: t3))
                == .interleavedReply(exchange: 8, echo: 1, t2: PeerTime(ns: 0), t3: PeerTime(ns: 0), followUp: ClockFollowUp(exchange: 7, echo: .min, t3: PeerTime(ns: t3))))
        }
    }

    @Test("a carried result whose reply arrived before its request left or more than 10 s after, a carried transmit time that is no instant, a flag bit not defined, a part missing or bytes after it, are refused")
    func refused() {
        #expect(throws: DecodeError.self) { try PeerMessage.decode(Self.request(t1: 10, t4: 9)) }
        #expect(throws: DecodeError.self) { try PeerMessage.decode(Self.request(t1: 0, t4: Limits.clockResultRoundTripNs + 1)) }
        #expect(throws: DecodeError.self) { try PeerMessage.decode(Self.reply(t3: Limits.instantNs.upperBound + 1)) }
        #expect(throws: DecodeError.self) { try PeerMessage.decode(Self.reply(t3: .min)) }
        var flagged = PeerMessage.interleavedRequest(exchange: 8, t1: PeerTime(ns: 0), result: nil).encoded()
        flagged[flagged.count - 1] = 2
        #expect(throws: DecodeError.self) { try PeerMessage.decode(flagged) }
        #expect(throws: DecodeError.self) { try PeerMessage.decode(Array(Self.request(t1: 0, t4: 1).dropLast())) }
        #expect(throws: DecodeError.self) { try PeerMessage.decode(Array(Self.reply(t3: 0).dropLast(20))) }
        #expect(throws: DecodeError.self) { try PeerMessage.decode(PeerMessage.interleavedReply(exchange: 8, echo: 1, t2: PeerTime(ns: 0), t3: PeerTime(ns: 0), followUp: nil).encoded() + [0]) }
    }
}
