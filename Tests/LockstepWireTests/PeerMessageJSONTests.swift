import Foundation
import LockstepCore
import LockstepPeerWire
import Testing

/// The JSON form of peer messages holds to the wire's ranges: what the binary decoder refuses,
/// the JSON decoder refuses too.
@Suite("Peer message JSON")
struct PeerMessageJSONTests {
    static func decode(_ json: String) throws -> PeerMessage {
        try JSONDecoder().decode(PeerMessageJSON.self, from: Data(json.utf8)).message
    }

    @Test("a clock request in range decodes")
    func inRange() throws {
        #expect(try Self.decode(#"{"type": "clock_request", "exchange": 7, "t1": 1000}"#) == .clockRequest(exchange: 7, t1: PeerTime(ns: 1000)))
    }

    @Test("a time beyond the instant range is refused, as on the wire")
    func outOfRange() {
        #expect(throws: DecodingError.self) { try Self.decode(#"{"type": "clock_request", "exchange": 7, "t1": 9223372036854775807}"#) }
        #expect(throws: DecodingError.self) {
            try Self.decode(#"{"type": "clock_reply", "exchange": 7, "t1": 1, "t2": -9223372036854775808, "t3": 0}"#)
        }
    }
}
