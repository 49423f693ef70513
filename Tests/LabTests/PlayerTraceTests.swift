import Foundation
import LockstepLab
import Testing

/// Reading a reference player's log back (no lab needed): the timelines it received, with when
/// they arrived and which command set them, beside its segments.
@Suite("PlayerTrace")
struct PlayerTraceTests {
    @Test("timeline lines become instructions, kept even when a later segment replaces theirs; other lines do not")
    func instructions() throws {
        let lines = [
            #"{"kind":"segment","cause":"timeline","received_host_ns":1000,"origin_peer_id":"aa","origin_lamport":3,"segment":{"from_host_ns":40000,"position_ns":0,"rate":1}}"#,
            #"{"kind":"segment","cause":"rate-correction","segment":{"from_host_ns":50000,"position_ns":10000,"rate":1.001}}"#,
            #"{"kind":"segment","cause":"timeline","received_host_ns":2000,"origin_peer_id":"bb","origin_lamport":1,"segment":{"from_host_ns":30000,"position_ns":7000,"rate":0}}"#,
            #"{"kind":"tick","host_time_ns":60000,"position_ns":20000}"#,
        ]
        let trace = PlayerTrace(name: "h1", lines: lines.map { Substring($0) })
        #expect(trace.segments.map(\.from) == [30000])
        #expect(trace.instructions.count == 2)
        let play = try #require(trace.instruction(from: "aa", lamport: 3))
        #expect(play.received == 1000 && play.from == 40000 && play.rate == 1)
        #expect(trace.instruction(from: "bb", lamport: 1)?.rate == 0)
        #expect(trace.instruction(from: "aa", lamport: 4) == nil)
    }
}
