import LockstepPlayerProtocol
import Testing

/// Every number a player can send is checked when the agent decodes the request: out of range is
/// `invalid_field`, naming the field and its range, before any of the agent's arithmetic sees it.
@Suite("Player request validation")
struct PlayerRequestValidationTests {
    static func decode<T: PlayerRequest>(_ type: T.Type, _ json: String) throws(ProtocolError) -> T {
        try PlayerJSON.decode(T.self, from: Array(json.utf8))
    }

    static func refusal<T: PlayerRequest>(_ type: T.Type, _ json: String) -> ProtocolError? {
        do {
            _ = try decode(T.self, json)
            return nil
        } catch {
            return error
        }
    }

    @Test("a hello with a start latency of Int64.max is refused, naming the field and the range")
    func helloLatency() {
        let e = Self.refusal(HelloRequest.self, #"{"protocol":1,"role":"player","start_latency_ns":9223372036854775807}"#)
        #expect(e?.code == .invalidField)
        #expect(e?.message == "start_latency_ns must be within 0...10000000000, not 9223372036854775807")
    }

    @Test(
        "every out-of-range number of every request is refused as invalid_field naming its field",
        arguments: [
            ("hello", #"{"protocol":1,"output_latency_ns":-1}"#, "output_latency_ns"),
            ("hello", #"{"protocol":1,"sync_tolerance_ns":10000000001}"#, "sync_tolerance_ns"),
            ("load", #"{"item":"a","duration_ns":-5}"#, "duration_ns"),
            ("intent", #"{"action":"seek","position_ns":-1}"#, "position_ns"),
            ("intent", #"{"action":"rate","rate":17}"#, "rate"),
            ("intent", #"{"action":"rate","rate":0}"#, "rate"),
            ("position", #"{"position_ns":-9223372036854775808,"host_time_ns":1}"#, "position_ns"),
            ("position", #"{"position_ns":1,"host_time_ns":9223372036854775807}"#, "host_time_ns"),
            ("end_suspension", #"{"suspension_id":1,"propose_position_ns":31536000000000001}"#, "propose_position_ns"),
            ("play_immediately", #"{"rate":1e300}"#, "rate"),
            ("start_latency", #"{"start_latency_ns":-1}"#, "start_latency_ns"),
            ("start_latency", #"{"start_latency_ns":10000000001}"#, "start_latency_ns"),
            ("command", #"{"action":"seek","position_ns":-1}"#, "position_ns"),
            ("command", #"{"action":"play","rate":0.01}"#, "rate"),
            ("sim_clock", #"{"jump_ms":1e12}"#, "jump_ms"),
            ("sim_clock", #"{"skew_ppm":-5000}"#, "skew_ppm"),
            ("resume_player", #"{"propose_position_ns":-1}"#, "propose_position_ns"),
        ]
    )
    func outOfRange(_ type: String, _ json: String, _ field: String) {
        let e: ProtocolError?
        switch type {
        case "hello": e = Self.refusal(HelloRequest.self, json)
        case "load": e = Self.refusal(LoadRequest.self, json)
        case "intent": e = Self.refusal(IntentRequest.self, json)
        case "position": e = Self.refusal(PositionReport.self, json)
        case "end_suspension": e = Self.refusal(EndSuspensionRequest.self, json)
        case "play_immediately": e = Self.refusal(PlayImmediatelyRequest.self, json)
        case "start_latency": e = Self.refusal(StartLatencyRequest.self, json)
        case "command": e = Self.refusal(CommandRequest.self, json)
        case "sim_clock": e = Self.refusal(SimClockRequest.self, json)
        case "resume_player": e = Self.refusal(ResumePlayerRequest.self, json)
        default: e = nil
        }
        #expect(e?.code == .invalidField, "\(type) \(json)")
        #expect(e?.message.hasPrefix(field + " must be within") == true, "\(e?.message ?? "accepted")")
    }

    @Test("values at the ends of each range are accepted")
    func edgesAccepted() throws {
        _ = try Self.decode(HelloRequest.self, #"{"protocol":1,"start_latency_ns":10000000000,"output_latency_ns":0}"#)
        _ = try Self.decode(IntentRequest.self, #"{"action":"rate","rate":16}"#)
        _ = try Self.decode(IntentRequest.self, #"{"action":"rate","rate":0.0625}"#)
        _ = try Self.decode(PositionReport.self, #"{"position_ns":31536000000000000,"host_time_ns":-4611686018427387904}"#)
    }

    @Test("a closed set of strings names the values it accepts")
    func closedEnums() {
        #expect(Self.refusal(LoadRequest.self, #"{"item":"a","share":"everyone"}"#)?.message == #"field share: must be one of "group", "solo", not "everyone""#)
        #expect(Self.refusal(IntentRequest.self, #"{"action":"rewind"}"#)?.code == .invalidField)
        #expect(Self.refusal(SubscribeRequest.self, #"{"topics":["state","gossip"]}"#)?.code == .invalidField)
    }

    @Test(
        "an integer field given a fraction or a number past its type is invalid_field naming the field, not malformed",
        arguments: [
            ("position", #"{"position_ns":1.5,"host_time_ns":1}"#, "position_ns must be an integer, not 1.5"),
            ("position", #"{"host_time_ns":1,"position_ns":9223372036854775808}"#, "position_ns is out of range for its integer type"),
            ("position", #"{"position_ns":0,"host_time_ns":-1e30}"#, "host_time_ns is out of range for its integer type"),
            ("hello", #"{"protocol":1,"role":"player","start_latency_ns":0.5}"#, "start_latency_ns must be an integer, not 0.5"),
            ("hello", #"{"protocol":1.5}"#, "protocol must be an integer, not 1.5"),
            ("end_suspension", #"{"suspension_id":-1}"#, "suspension_id is out of range for its integer type"),
            ("end_suspension", #"{"suspension_id":1,"propose_position_ns":2.25}"#, "propose_position_ns must be an integer, not 2.25"),
        ]
    )
    func numbersThatDoNotFit(_ type: String, _ json: String, _ message: String) {
        let e: ProtocolError? = switch type {
        case "hello": Self.refusal(HelloRequest.self, json)
        case "position": Self.refusal(PositionReport.self, json)
        case "end_suspension": Self.refusal(EndSuspensionRequest.self, json)
        default: nil
        }
        #expect(e?.code == .invalidField, "\(json)")
        #expect(e?.message.hasPrefix(message) == true, "\(e?.message ?? "accepted")")
    }

    @Test("a fraction in a rate is a rate, and a line that is no object stays malformed")
    func numbersThatFit() throws {
        #expect(try Self.decode(IntentRequest.self, #"{"action":"rate","rate":1.5}"#).rate == 1.5)
        #expect(Self.refusal(PositionReport.self, "[1.5]")?.code == .malformed)
        #expect(Self.refusal(PositionReport.self, "not json")?.code == .malformed)
    }

    @Test("a seek without a position and a rate without a rate are refused at decoding")
    func requiredByAction() {
        #expect(Self.refusal(IntentRequest.self, #"{"action":"seek"}"#)?.message == "seek needs position_ns")
        #expect(Self.refusal(CommandRequest.self, #"{"action":"rate"}"#)?.message == "rate needs rate")
        #expect(Self.refusal(CommandRequest.self, #"{"action":"load"}"#)?.message == "load needs item")
    }
}
