import LockstepCore

/// A JSON form of every peer message, for the test vectors in `Protocol/vectors/` and for
/// debugging: `{"type": "clock_request", "exchange": 7, "t1": 1000}`. The wire form is binary
/// (``PeerMessage/encoded()``); this one only describes it. The record types inside are `Codable`
/// in the core; the message itself is wrapped here, beside the one table of type names
/// (``MessageType``).
public struct PeerMessageJSON: Codable, Equatable, Sendable {
    public var message: PeerMessage

    public init(_ message: PeerMessage) {
        self.message = message
    }

    enum CodingKeys: String, CodingKey {
        case type, exchange, echo, t1, t2, t3, t4, name, result
        case followUp = "follow_up"
        case wantsReply = "wants_reply"
        case wantsAck = "wants_ack"
        case operation, record, id, digest, participants, participant, report, epoch, key, entries, removed, ephemeral, offer, fingerprint, after, more, addresses
        case intakeNs = "intake_ns"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let type = try c.decode(String.self, forKey: .type)
        switch type {
        case "clock_request":
            message = .clockRequest(exchange: try c.decode(UInt32.self, forKey: .exchange), t1: try c.decode(PeerTime.self, forKey: .t1))
        case "clock_reply":
            message = .clockReply(exchange: try c.decode(UInt32.self, forKey: .exchange), echo: try c.decode(Int64.self, forKey: .t1), t2: try c.decode(PeerTime.self, forKey: .t2), t3: try c.decode(PeerTime.self, forKey: .t3))
        case "clock_follow_up":
            message = .clockFollowUp(exchange: try c.decode(UInt32.self, forKey: .exchange), echo: try c.decode(Int64.self, forKey: .t1), t3: try c.decode(PeerTime.self, forKey: .t3))
        case "clock_result":
            message = .clockResult(
                exchange: try c.decode(UInt32.self, forKey: .exchange), echo: try c.decode(Int64.self, forKey: .echo), t1: try c.decode(PeerTime.self, forKey: .t1),
                t4: try c.decode(PeerTime.self, forKey: .t4))
        case "interleaved_request":
            message = .interleavedRequest(
                exchange: try c.decode(UInt32.self, forKey: .exchange), t1: try c.decode(PeerTime.self, forKey: .t1),
                result: try c.decodeIfPresent(ExchangeResult.self, forKey: .result))
        case "interleaved_reply":
            message = .interleavedReply(
                exchange: try c.decode(UInt32.self, forKey: .exchange), echo: try c.decode(Int64.self, forKey: .t1), t2: try c.decode(PeerTime.self, forKey: .t2),
                t3: try c.decode(PeerTime.self, forKey: .t3), followUp: try c.decodeIfPresent(ClockFollowUp.self, forKey: .followUp))
        case "hello":
            message = .hello(name: try c.decode(String.self, forKey: .name), wantsReply: try c.decode(Bool.self, forKey: .wantsReply))
        case "goodbye":
            message = .goodbye
        case "peer_addresses":
            message = .peerAddresses(try c.decode([PeerAddress].self, forKey: .addresses))
        case "operation":
            message = .operation(try c.decode(GroupOperation.self, forKey: .operation), wantsAck: try c.decode(Bool.self, forKey: .wantsAck))
        case "item_register":
            message = .itemRegister(try c.decode(ItemRecord.self, forKey: .record))
        case "current_register":
            message = .currentRegister(try c.decode(CurrentRecord.self, forKey: .record))
        case "checkpoint_vector":
            message = .checkpointVector(try c.decode([VersionVector.Entry].self, forKey: .entries), fingerprint: try c.decode(UInt64.self, forKey: .fingerprint))
        case "ack":
            message = .ack(try c.decode(OperationID.self, forKey: .id))
        case "digest":
            message = .digest(try c.decode(GroupDigest.self, forKey: .digest), wantsReply: try c.decode(Bool.self, forKey: .wantsReply))
        case "participant_digest":
            message = .participantDigest(
                try c.decode([ParticipantDigest].self, forKey: .participants), after: try c.decodeIfPresent(PeerID.self, forKey: .after),
                more: try c.decodeIfPresent(Bool.self, forKey: .more) ?? false, wantsReply: try c.decode(Bool.self, forKey: .wantsReply))
        case "participant":
            message = .participant(try c.decode(ParticipantRecord.self, forKey: .participant))
        case "clock_report":
            message = .clockReport(try c.decode(ClockReport.self, forKey: .report))
        case "sync_report":
            message = .syncReport(try c.decode(SyncReport.self, forKey: .report))
        case "intake":
            message = .intake(.nanoseconds(try c.decode(Int64.self, forKey: .intakeNs)))
        case "epoch_key":
            message = .epochKey(epoch: try c.decode(UInt32.self, forKey: .epoch), key: try c.decode([UInt8].self, forKey: .key), removed: try c.decode([PeerID].self, forKey: .removed))
        case "session_offer":
            message = .sessionOffer(ephemeral: try c.decode([UInt8].self, forKey: .ephemeral))
        case "session_answer":
            message = .sessionAnswer(ephemeral: try c.decode([UInt8].self, forKey: .ephemeral), offer: try c.decode([UInt8].self, forKey: .offer))
        case "member_key":
            message = .memberKey(key: try c.decode([UInt8].self, forKey: .key), name: try c.decode(String.self, forKey: .name))
        case "key_ack":
            message = .keyAck(epoch: try c.decode(UInt32.self, forKey: .epoch))
        default:
            throw DecodingError.dataCorruptedError(forKey: .type, in: c, debugDescription: "unknown peer message type \(type)")
        }
        // The same ranges as the wire: the message goes through the binary decoder's checks.
        do {
            message = try PeerMessage.decode(message.encoded())
        } catch {
            throw DecodingError.dataCorruptedError(forKey: .type, in: c, debugDescription: "\(type): \(error)")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(MessageType(message).name, forKey: .type)
        switch message {
        case .clockRequest(let exchange, let t1):
            try c.encode(exchange, forKey: .exchange)
            try c.encode(t1, forKey: .t1)
        case .clockReply(let exchange, let echo, let t2, let t3):
            try c.encode(exchange, forKey: .exchange)
            try c.encode(echo, forKey: .t1)
            try c.encode(t2, forKey: .t2)
            try c.encode(t3, forKey: .t3)
        case .clockFollowUp(let exchange, let echo, let t3):
            try c.encode(exchange, forKey: .exchange)
            try c.encode(echo, forKey: .t1)
            try c.encode(t3, forKey: .t3)
        case .clockResult(let exchange, let echo, let t1, let t4):
            try c.encode(exchange, forKey: .exchange)
            try c.encode(echo, forKey: .echo)
            try c.encode(t1, forKey: .t1)
            try c.encode(t4, forKey: .t4)
        case .interleavedRequest(let exchange, let t1, let result):
            try c.encode(exchange, forKey: .exchange)
            try c.encode(t1, forKey: .t1)
            try c.encodeIfPresent(result, forKey: .result)
        case .interleavedReply(let exchange, let echo, let t2, let t3, let followUp):
            try c.encode(exchange, forKey: .exchange)
            try c.encode(echo, forKey: .t1)
            try c.encode(t2, forKey: .t2)
            try c.encode(t3, forKey: .t3)
            try c.encodeIfPresent(followUp, forKey: .followUp)
        case .hello(let name, let wantsReply):
            try c.encode(name, forKey: .name)
            try c.encode(wantsReply, forKey: .wantsReply)
        case .goodbye:
            break
        case .peerAddresses(let entries):
            try c.encode(entries, forKey: .addresses)
        case .operation(let op, let wantsAck):
            try c.encode(op, forKey: .operation)
            try c.encode(wantsAck, forKey: .wantsAck)
        case .itemRegister(let r):
            try c.encode(r, forKey: .record)
        case .currentRegister(let r):
            try c.encode(r, forKey: .record)
        case .checkpointVector(let entries, let fingerprint):
            try c.encode(entries, forKey: .entries)
            try c.encode(fingerprint, forKey: .fingerprint)
        case .ack(let id):
            try c.encode(id, forKey: .id)
        case .digest(let d, let wantsReply):
            try c.encode(d, forKey: .digest)
            try c.encode(wantsReply, forKey: .wantsReply)
        case .participantDigest(let participants, let after, let more, let wantsReply):
            try c.encode(participants, forKey: .participants)
            try c.encodeIfPresent(after, forKey: .after)
            if more { try c.encode(more, forKey: .more) }
            try c.encode(wantsReply, forKey: .wantsReply)
        case .participant(let p):
            try c.encode(p, forKey: .participant)
        case .clockReport(let r):
            try c.encode(r, forKey: .report)
        case .syncReport(let r):
            try c.encode(r, forKey: .report)
        case .intake(let span):
            try c.encode(span.ns, forKey: .intakeNs)
        case .epochKey(let epoch, let key, let removed):
            try c.encode(epoch, forKey: .epoch)
            try c.encode(key, forKey: .key)
            try c.encode(removed, forKey: .removed)
        case .sessionOffer(let e):
            try c.encode(e, forKey: .ephemeral)
        case .sessionAnswer(let e, let offer):
            try c.encode(e, forKey: .ephemeral)
            try c.encode(offer, forKey: .offer)
        case .memberKey(let key, let name):
            try c.encode(key, forKey: .key)
            try c.encode(name, forKey: .name)
        case .keyAck(let epoch):
            try c.encode(epoch, forKey: .epoch)
        }
    }
}
