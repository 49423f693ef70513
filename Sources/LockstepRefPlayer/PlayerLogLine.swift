import Foundation

/// One line of the reference player's log (JSON): what it loaded, and each segment of its true
/// playback with why it began (``PlayerTrace`` in LockstepLab reads them back).
///
/// A typed line, encoded by `JSONEncoder`: the player used to build a dictionary and write it with
/// `JSONSerialization` and sorted keys, which bridged every key and value to Foundation objects
/// and compared the keys by locale. That, at ten lines a second, was half of a playing player's
/// CPU (docs/scale.md, twenty-fifth step).
struct PlayerLogLine: Encodable {
    var kind: String
    var player: String
    var outcome: String?
    var cause: String?
    var state: String?
    var segment: VirtualPlayback.Segment?
    var receivedHostNs: Int64?
    var askedHostNs: Int64?
    var askedPositionNs: Int64?
    var errorNs: Int64?
    var origin: String?
    var originPeerID: String?
    var originLamport: UInt64?
    var action: String?

    init(kind: String, player: String) {
        self.kind = kind
        self.player = player
    }

    enum CodingKeys: String, CodingKey {
        case kind, player, outcome, cause, state, segment, origin, action
        case receivedHostNs = "received_host_ns"
        case askedHostNs = "asked_host_ns"
        case askedPositionNs = "asked_position_ns"
        case errorNs = "error_ns"
        case originPeerID = "origin_peer_id"
        case originLamport = "origin_lamport"
    }
}
