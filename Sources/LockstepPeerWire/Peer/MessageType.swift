import LockstepCore

/// The one-byte type of a peer message on the wire (`Protocol/peer-protocol.md` §4): the one
/// table both the encoder and the decoder use.
public enum MessageType: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case clockRequest = 0x01
    case clockReply = 0x02
    case hello = 0x03
    case goodbye = 0x04
    case clockFollowUp = 0x05
    case clockResult = 0x06
    case peerAddresses = 0x07
    case interleavedRequest = 0x08
    case interleavedReply = 0x09
    case operation = 0x10
    case itemRegister = 0x11
    case ack = 0x12
    case digest = 0x13
    case participant = 0x14
    case currentRegister = 0x15
    case participantDigest = 0x19
    case checkpointVector = 0x18
    case clockReport = 0x20
    case syncReport = 0x21
    case intake = 0x22
    case epochKey = 0x30
    case keyAck = 0x31
    case memberKey = 0x32
    case sessionOffer = 0x33
    case sessionAnswer = 0x34

    /// The type of `message`.
    public init(_ message: PeerMessage) {
        switch message {
        case .clockRequest: self = .clockRequest
        case .clockReply: self = .clockReply
        case .clockFollowUp: self = .clockFollowUp
        case .clockResult: self = .clockResult
        case .interleavedRequest: self = .interleavedRequest
        case .interleavedReply: self = .interleavedReply
        case .hello: self = .hello
        case .goodbye: self = .goodbye
        case .peerAddresses: self = .peerAddresses
        case .operation: self = .operation
        case .itemRegister: self = .itemRegister
        case .currentRegister: self = .currentRegister
        case .ack: self = .ack
        case .digest: self = .digest
        case .participantDigest: self = .participantDigest
        case .checkpointVector: self = .checkpointVector
        case .participant: self = .participant
        case .clockReport: self = .clockReport
        case .syncReport: self = .syncReport
        case .intake: self = .intake
        case .epochKey: self = .epochKey
        case .memberKey: self = .memberKey
        case .sessionOffer: self = .sessionOffer
        case .sessionAnswer: self = .sessionAnswer
        case .keyAck: self = .keyAck
        }
    }

    /// The name in the spec and in the JSON form of the vectors.
    public var name: String {
        switch self {
        case .clockRequest: "clock_request"
        case .clockReply: "clock_reply"
        case .clockFollowUp: "clock_follow_up"
        case .clockResult: "clock_result"
        case .interleavedRequest: "interleaved_request"
        case .interleavedReply: "interleaved_reply"
        case .hello: "hello"
        case .goodbye: "goodbye"
        case .peerAddresses: "peer_addresses"
        case .operation: "operation"
        case .itemRegister: "item_register"
        case .currentRegister: "current_register"
        case .ack: "ack"
        case .digest: "digest"
        case .participantDigest: "participant_digest"
        case .checkpointVector: "checkpoint_vector"
        case .participant: "participant"
        case .clockReport: "clock_report"
        case .syncReport: "sync_report"
        case .intake: "intake"
        case .epochKey: "epoch_key"
        case .memberKey: "member_key"
        case .sessionOffer: "session_offer"
        case .sessionAnswer: "session_answer"
        case .keyAck: "key_ack"
        }
    }

    public var description: String { name }
}
