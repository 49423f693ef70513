import LockstepPlayerProtocol

/// Every request the player socket decodes, by its `type`: the player target decodes each line
/// as every one of them. A new request type goes here, with an example or two (they seed the
/// corpus and the dictionary).
let playerRequests: [PlayerRequestKind] = [
    PlayerRequestKind("hello", HelloRequest.self, examples: [
        HelloRequest(),
        HelloRequest(role: .player, name: "mpv", capabilities: PlayerCapabilities(rate: true, exactSeek: true, startAtHostTime: true), outputLatencyNs: 45_000_000, startLatencyNs: 20_000_000),
        HelloRequest(protocol: 2, role: .monitor, name: "lockstep"),
    ]),
    PlayerRequestKind("status", EmptyResult.self, examples: [EmptyResult()]),
    PlayerRequestKind("peers", EmptyResult.self, examples: [EmptyResult()]),
    PlayerRequestKind("clock", EmptyResult.self, examples: [EmptyResult()]),
    PlayerRequestKind("command", CommandRequest.self, examples: [
        CommandRequest(action: .play),
        CommandRequest(action: .seek, positionNs: 90_000_000_000),
        CommandRequest(action: .rate, rate: 1.25),
        CommandRequest(action: .load, item: "https://example.com/a.mp4", title: "A", artworkURL: "https://example.com/a.jpg", durationNs: 60_000_000_000),
    ]),
    PlayerRequestKind("subscribe", SubscribeRequest.self, examples: [SubscribeRequest(topics: [.state, .peers, .players])]),
    PlayerRequestKind("start_latency", StartLatencyRequest.self, examples: [StartLatencyRequest(startLatencyNs: 60_000_000)]),
]

/// One request type: how to decode a line as it, and example lines.
struct PlayerRequestKind: Sendable {
    let type: String
    /// Decodes a line as this request; traps if an accepted request does not survive a round trip.
    let check: @Sendable ([UInt8]) -> Void
    let examples: @Sendable () -> [[UInt8]]

    init<Request: Codable & Equatable & Sendable>(_ type: String, _: Request.Type, examples: [Request]) {
        self.type = type
        check = { line in
            guard let request = try? PlayerJSON.decode(Request.self, from: line) else { return }
            // A request that decodes but cannot be encoded (a rate of 1e999 decodes as infinity) is
            // the agent's to refuse; the round trip applies to the others.
            guard let encoded = try? PlayerJSON.encode(request) else { return }
            let again: Request
            do {
                again = try PlayerJSON.decode(Request.self, from: encoded)
            } catch {
                fatalError("player: \(type) request \(request) encodes as \(String(decoding: encoded, as: UTF8.self)), which does not decode: \(error)")
            }
            require(again == request, "player: \(type) request does not round-trip: \(request) became \(again)")
        }
        self.examples = {
            examples.enumerated().map { i, example in
                // The request's fields go beside `type` and `request_id`, as clients send them.
                let fields = (try? PlayerJSON.encode(example)) ?? Array("{}".utf8)
                let head = Array("{\"request_id\":\(i + 1),\"type\":\"\(type)\"".utf8)
                return head + (fields.count > 2 ? [UInt8(ascii: ",")] : []) + fields.dropFirst()
            }
        }
    }
}
