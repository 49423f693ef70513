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

    @Test("a sync report with an error beyond a year, more than four players, a player twice or an unknown flag is refused")
    func syncReportEdges() throws {
        let ok = #"{"type": "sync_report", "report": {"wants_reports": true, "entries": [{"player_id": 1, "error": -5000}]}}"#
        #expect(try Self.decode(ok) == .syncReport(SyncReport(wantsReports: true, entries: [.init(playerID: 1, error: .nanoseconds(-5000))])))
        #expect(throws: DecodingError.self) {
            try Self.decode(#"{"type": "sync_report", "report": {"wants_reports": false, "entries": [{"player_id": 1, "error": 9223372036854775807}]}}"#)
        }
        #expect(throws: DecodingError.self) {
            try Self.decode(#"{"type": "sync_report", "report": {"wants_reports": false, "entries": [{"player_id": 2, "error": 1}, {"player_id": 2, "error": 1}]}}"#)
        }
        // Five entries where four is the most (the count is checked before any entry is read).
        #expect(throws: DecodeError.self) { try PeerMessage.decode([MessageType.syncReport.rawValue, 0, 5] + Array(repeating: 0, count: 60)) }
        #expect(throws: DecodeError.self) { try PeerMessage.decode([MessageType.syncReport.rawValue, 2, 0]) }
    }
}
