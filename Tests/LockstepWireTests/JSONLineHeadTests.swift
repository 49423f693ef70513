import Foundation
import LockstepCore
import LockstepPlayerProtocol
import Testing

/// The one-pass read of a line's routing fields (``JSONLineHead``) says what `JSONDecoder` would,
/// or nothing: whenever it answers, the answer is the decoder's, and a line the decoder refuses
/// is never answered.
@Suite("JSON line head")
struct JSONLineHeadTests {
    /// What the decoder makes of a line's header: the header, or nil when it refuses the line.
    static func decoded(_ line: [UInt8]) -> RequestHeader? {
        try? PlayerJSON.decode(RequestHeader.self, from: line)
    }

    @Test("the agent's own lines are scanned, with the fields the decoder reads")
    func agentLines() throws {
        let origin = Origin(peerID: "0aef25064c223c9f9b2b35f9dafc67d0", name: "h1", action: .play, reason: nil, local: false, lamport: 7)
        let timeline = try PlayerJSON.encode(TimelineEvent(item: "lockstep://reference/10-minutes", state: .playing, positionNs: 7_000_000_000, rate: 1, hostTimeNs: 1_046_653_683_952, origin: origin))
        let scanned = try #require(JSONLineHead.scan(timeline, "event", "request_id"))
        #expect(scanned.first == .string("timeline"))
        #expect(scanned.second == nil)

        let request = Array(#"{"type":"position","request_id":42,"position_ns":5,"host_time_ns":9}"#.utf8)
        let header = try #require(RequestHeader(scanning: request))
        #expect(header.type == "position")
        #expect(header.requestID == .number(42))
        let named = try #require(RequestHeader(scanning: Array(#" { "request_id" : "a-1" , "type" : "status" } "#.utf8)))
        #expect(named.requestID == .string("a-1"))
        let silent = try #require(RequestHeader(scanning: Array(#"{"type":"position","request_id":null}"#.utf8)))
        #expect(silent.requestID == nil)
    }

    @Test(
        "a line the scan is not sure of is left to the decoder",
        arguments: [
            #"{"\u0074ype":"status"}"#,  // an escaped key may be "type"
            #"{"type":"status","type":"clock"}"#,  // a field twice
            #"{"type":"st\"atus"}"#,  // a value with an escape
            #"{"type":"status","name":"é"}"#,  // beyond ASCII: UTF-8 is the decoder's to check
            #"{"type":"status","request_id":1.0}"#,  // not an integer
            #"{"type":"status","request_id":9223372036854775808}"#,  // past Int64
            #"{"type":"status","request_id":true}"#,
            #"{"type":"status","request_id":""#,
            #"{"type":"status"} x"#,  // trailing bytes
            #"{"type":"status",}"#,
            #"{"type":"status","n":01}"#,
            #"{"type":"status","n":-}"#,
            #"{"type":"status","n":1.}"#,
            #"{"type":"status","n":"a\qb"}"#,
            "{\"type\":\"status\",\"n\":\"a\tb\"}",  // a raw control character
            #"[{"type":"status"}]"#,
            #"{"type":3}"#,
            "",
        ])
    func unsure(_ text: String) {
        #expect(RequestHeader(scanning: Array(text.utf8)) == nil)
    }

    @Test("nesting deeper than the scan's limit is left to the decoder")
    func deep() {
        let depth = JSONLineHead.maxDepth
        let within = #"{"type":"a","x":"# + String(repeating: "[", count: depth - 1) + String(repeating: "]", count: depth - 1) + "}"
        let beyond = #"{"type":"a","x":"# + String(repeating: "[", count: depth) + String(repeating: "]", count: depth) + "}"
        #expect(RequestHeader(scanning: Array(within.utf8))?.type == "a")
        #expect(RequestHeader(scanning: Array(beyond.utf8)) == nil)
    }

    @Test("on 3,000 random lines, whatever the scan answers is what the decoder reads, and it answers most it can")
    func agreesWithTheDecoder() {
        var rng = SplitMix64(seed: 17)
        var answered = 0, decodable = 0, refused = 0
        for _ in 0..<3_000 {
            let line = Array(Self.randomLine(&rng).utf8)
            let decoded = Self.decoded(line)
            if decoded == nil { refused += 1 } else { decodable += 1 }
            guard let scanned = RequestHeader(scanning: line) else { continue }
            answered += 1
            #expect(decoded?.type == scanned.type && decoded?.requestID == scanned.requestID, "\(String(decoding: line, as: UTF8.self))")
        }
        // The generator's lines are mostly plain: the scan must not give up on those the decoder reads.
        #expect(Double(answered) > 0.8 * Double(decodable), "answered \(answered) of \(decodable) the decoder reads")
        // And many are refused by the decoder (a field missing or mistyped, a damaged byte):
        // none of them may be answered (checked above).
        #expect(refused > 500, "\(refused) refused")
    }

    // MARK: - Random lines

    static func randomLine(_ rng: inout SplitMix64) -> String {
        var fields: [String] = []
        var keys = Array(["type", "request_id", "event", "position_ns", "x", "item", "origin"].shuffled(using: &rng).prefix(Int.random(in: 0...6, using: &rng)))
        // One line in sixteen names a field twice (the decoder takes the first; the scan gives up).
        if let again = keys.first, Int.random(in: 0..<16, using: &rng) == 0 { keys.append(again) }
        for key in keys {
            let value: String
            switch key {
            case "type", "event": value = Int.random(in: 0..<10, using: &rng) == 0 ? randomValue(&rng, depth: 0) : "\"\(["status", "position", "timeline", "a b"].randomElement(using: &rng)!)\""
            case "request_id": value = [String(Int64.random(in: Int64.min...Int64.max, using: &rng)), "\"r\(Int.random(in: 0..<99, using: &rng))\"", "null", randomValue(&rng, depth: 0)].randomElement(using: &rng)!
            default: value = randomValue(&rng, depth: 0)
            }
            fields.append("\(space(&rng))\"\(key)\"\(space(&rng)):\(space(&rng))\(value)\(space(&rng))")
        }
        var line = "{" + fields.joined(separator: ",") + "}"
        // One line in eight is damaged: a byte dropped, doubled or replaced.
        if Int.random(in: 0..<8, using: &rng) == 0, !line.isEmpty {
            var bytes = Array(line.utf8)
            let at = Int.random(in: 0..<bytes.count, using: &rng)
            switch Int.random(in: 0..<3, using: &rng) {
            case 0: bytes.remove(at: at)
            case 1: bytes.insert(bytes[at], at: at)
            default: bytes[at] = Array("{}[]\",:\\ 0-.e".utf8).randomElement(using: &rng)!
            }
            line = String(decoding: bytes, as: UTF8.self)
        }
        return line
    }

    static func space(_ rng: inout SplitMix64) -> String {
        ["", "", "", " ", "\t", "\r\n "].randomElement(using: &rng)!
    }

    static func randomValue(_ rng: inout SplitMix64, depth: Int) -> String {
        switch Int.random(in: 0..<(depth > 3 ? 5 : 7), using: &rng) {
        case 0: return ["true", "false", "null"].randomElement(using: &rng)!
        case 1: return String(Int.random(in: -1_000_000...1_000_000, using: &rng))
        case 2: return ["0.5", "-1e9", "3E+2", "1.25e-3", "9223372036854775807", "-9223372036854775808", "123456789012345678901"].randomElement(using: &rng)!
        case 3: return "\"" + ["plain", "with \\\"quote\\\"", "tab\\t", "slash\\/", "lockstep://a/b", ""].randomElement(using: &rng)! + "\""
        case 4: return "\"\(Int.random(in: 0..<1000, using: &rng))\""
        case 5: return "[" + (0..<Int.random(in: 0...3, using: &rng)).map { _ in space(&rng) + randomValue(&rng, depth: depth + 1) }.joined(separator: ",") + "]"
        default:
            return "{" + (0..<Int.random(in: 0...3, using: &rng)).map { k in "\"k\(k)\":\(space(&rng))" + randomValue(&rng, depth: depth + 1) }.joined(separator: ",") + "}"
        }
    }
}
