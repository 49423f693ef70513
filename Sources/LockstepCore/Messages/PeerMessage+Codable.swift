/// A JSON form of every peer message, for the test vectors in `Protocol/vectors/` and for
/// debugging: `{"type": "clock_request", "exchange": 7, "t1": 1000}`. The wire form is binary
/// (see `LockstepWire`); this one only describes it.
extension PeerMessage: Codable {
    enum CodingKeys: String, CodingKey {
        case type, exchange, t1, t2, t3, name
        case wantsReply = "wants_reply"
        case wantsAck = "wants_ack"
        case record, relay, stamp, digest, participants, participant, report, epoch, key
    }

    /// The message's name in the JSON form and in the spec.
    public var typeName: String {
        switch self {
        case .clockRequest: "clock_request"
        case .clockReply: "clock_reply"
        case .clockFollowUp: "clock_follow_up"
        case .hello: "hello"
        case .goodbye: "goodbye"
        case .itemRecord: "item_record"
        case .currentRecord: "current_record"
        case .ack: "ack"
        case .digest: "digest"
        case .participant: "participant"
        case .clockReport: "clock_report"
        case .keyUpdate: "key_update"
        case .keyAck: "key_ack"
        }
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let type = try c.decode(String.self, forKey: .type)
        switch type {
        case "clock_request":
            self = .clockRequest(exchange: try c.decode(UInt32.self, forKey: .exchange), t1: try c.decode(Int64.self, forKey: .t1))
        case "clock_reply":
            self = .clockReply(exchange: try c.decode(UInt32.self, forKey: .exchange), t1: try c.decode(Int64.self, forKey: .t1), t2: try c.decode(Int64.self, forKey: .t2), t3: try c.decode(Int64.self, forKey: .t3))
        case "clock_follow_up":
            self = .clockFollowUp(exchange: try c.decode(UInt32.self, forKey: .exchange), t1: try c.decode(Int64.self, forKey: .t1), t3: try c.decode(Int64.self, forKey: .t3))
        case "hello":
            self = .hello(name: try c.decode(String.self, forKey: .name), wantsReply: try c.decode(Bool.self, forKey: .wantsReply))
        case "goodbye":
            self = .goodbye
        case "item_record":
            self = .itemRecord(try c.decode(ItemRecord.self, forKey: .record), relay: try c.decodeIfPresent(RelayAnchor.self, forKey: .relay), wantsAck: try c.decode(Bool.self, forKey: .wantsAck))
        case "current_record":
            self = .currentRecord(try c.decode(CurrentRecord.self, forKey: .record), wantsAck: try c.decode(Bool.self, forKey: .wantsAck))
        case "ack":
            self = .ack(stamp: try c.decode(Stamp.self, forKey: .stamp))
        case "digest":
            self = .digest(try c.decode(GroupDigest.self, forKey: .digest), participants: try c.decode([ParticipantDigest].self, forKey: .participants), wantsReply: try c.decode(Bool.self, forKey: .wantsReply))
        case "participant":
            self = .participant(try c.decode(ParticipantRecord.self, forKey: .participant))
        case "clock_report":
            self = .clockReport(try c.decode(ClockReport.self, forKey: .report))
        case "key_update":
            self = .keyUpdate(epoch: try c.decode(UInt32.self, forKey: .epoch), key: try c.decode([UInt8].self, forKey: .key))
        case "key_ack":
            self = .keyAck(epoch: try c.decode(UInt32.self, forKey: .epoch))
        default:
            throw DecodingError.dataCorruptedError(forKey: .type, in: c, debugDescription: "unknown peer message type \(type)")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(typeName, forKey: .type)
        switch self {
        case .clockRequest(let exchange, let t1):
            try c.encode(exchange, forKey: .exchange)
            try c.encode(t1, forKey: .t1)
        case .clockReply(let exchange, let t1, let t2, let t3):
            try c.encode(exchange, forKey: .exchange)
            try c.encode(t1, forKey: .t1)
            try c.encode(t2, forKey: .t2)
            try c.encode(t3, forKey: .t3)
        case .clockFollowUp(let exchange, let t1, let t3):
            try c.encode(exchange, forKey: .exchange)
            try c.encode(t1, forKey: .t1)
            try c.encode(t3, forKey: .t3)
        case .hello(let name, let wantsReply):
            try c.encode(name, forKey: .name)
            try c.encode(wantsReply, forKey: .wantsReply)
        case .goodbye:
            break
        case .itemRecord(let r, let relay, let wantsAck):
            try c.encode(r, forKey: .record)
            try c.encodeIfPresent(relay, forKey: .relay)
            try c.encode(wantsAck, forKey: .wantsAck)
        case .currentRecord(let r, let wantsAck):
            try c.encode(r, forKey: .record)
            try c.encode(wantsAck, forKey: .wantsAck)
        case .ack(let stamp):
            try c.encode(stamp, forKey: .stamp)
        case .digest(let d, let participants, let wantsReply):
            try c.encode(d, forKey: .digest)
            try c.encode(participants, forKey: .participants)
            try c.encode(wantsReply, forKey: .wantsReply)
        case .participant(let p):
            try c.encode(p, forKey: .participant)
        case .clockReport(let r):
            try c.encode(r, forKey: .report)
        case .keyUpdate(let epoch, let key):
            try c.encode(epoch, forKey: .epoch)
            try c.encode(key, forKey: .key)
        case .keyAck(let epoch):
            try c.encode(epoch, forKey: .epoch)
        }
    }
}
