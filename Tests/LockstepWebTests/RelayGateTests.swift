import Foundation
import Testing

@testable import LockstepWeb

@Suite struct RelayGateTests {
    let gate = RelayGate()

    @Test func aTimeRequestIsAnsweredHereWithBothStamps() throws {
        #expect(gate.onFrame(#"{"type":"time","t1":1234.5}"#) == .time(TimeExchange(t1: 1234.5)))
        let reply = TimeExchange(t1: 1234.5).reply(t2: 100, t3: 250)
        let object = try #require(JSONSerialization.jsonObject(with: Data(reply.utf8)) as? [String: Any])
        #expect(object["event"] as? String == "time")
        #expect((object["t1"] as? NSNumber)?.doubleValue == 1234.5)
        #expect((object["t2_ns"] as? NSNumber)?.int64Value == 100)
        #expect((object["t3_ns"] as? NSNumber)?.int64Value == 250)
    }

    @Test(arguments: [#"{"type":"time"}"#, #"{"type":"time","t1":-1}"#, #"{"type":"time","t1":"5"}"#, #"{"type":"time","t1":1e300}"#])
    func aTimeRequestOutOfRangeIsRefusedAndNamesTheField(frame: String) {
        guard case .refuse(let line) = gate.onFrame(frame) else { Issue.record("accepted \(frame)"); return }
        #expect(line.contains("invalid_field") && line.contains("t1"))
    }

    @Test func playerAndDashboardRequestsPassUnchanged() {
        for frame in [#"{"type":"hello","protocol":1,"role":"player"}"#, #"{"type":"position","position_ns":1,"host_time_ns":2}"#, #"{"type":"subscribe","topics":["state"],"request_id":"a"}"#, #"{"type":"command","action":"pause","request_id":3}"#] {
            #expect(gate.onFrame(frame) == .forward(frame))
        }
    }

    @Test(arguments: ["group_create", "group_rotate", "group_show", "latency_set", "sim_clock", "suspend_player", "nonsense"])
    func requestsBeyondAPlayerAndViewerAreRefusedWithTheirID(type: String) {
        guard case .refuse(let line) = gate.onFrame(#"{"type":"\#(type)","request_id":7}"#) else { Issue.record("forwarded \(type)"); return }
        #expect(line.hasPrefix(#"{"request_id":7,"ok":false,"error":{"code":"unknown_type""#))
    }

    @Test func malformedFramesAreRefused() {
        for frame in ["", "[]", "not json", #"{"no_type":1}"#, "{\"type\":\n\"hello\"}"] {
            guard case .refuse(let line) = gate.onFrame(frame) else { Issue.record("accepted \(frame)"); continue }
            #expect(line.contains("malformed"))
        }
    }

    @Test func anOversizedFrameIsRefused() {
        let big = #"{"type":"hello","name":""# + String(repeating: "x", count: RelayGate.maxFrameBytes) + #""}"#
        guard case .refuse(let line) = gate.onFrame(big) else { Issue.record("accepted"); return }
        #expect(line.contains("oversized"))
    }

    @Test func aStringRequestIDIsEchoedEscaped() {
        guard case .refuse(let line) = gate.onFrame(#"{"type":"sim_clock","request_id":"a\"b"}"#) else { Issue.record("forwarded"); return }
        #expect(line.hasPrefix(#"{"request_id":"a\"b","#))
    }
}
