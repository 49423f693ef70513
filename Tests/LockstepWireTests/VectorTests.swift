import Foundation
import LockstepCore
import Testing

@testable import LockstepPeerWire

/// The test vectors in `Protocol/vectors/`: every peer message type, byte for byte, and sealed
/// envelopes. An independent implementation can check itself against the same files.
///
/// `LOCKSTEP_WRITE_VECTORS=1 swift test --filter VectorTests` rewrites them from the messages
/// below (only when the wire format changes on purpose, with a version bump).
@Suite("Protocol vectors")
struct VectorTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Protocol/vectors")

    struct MessageVector: Codable {
        var name: String
        var message: PeerMessageJSON
        var hex: String
    }

    struct EnvelopeVector: Codable {
        var name: String
        var keyHex: String
        var epoch: UInt32
        var sender: PeerID
        var incarnation: UInt64
        var sequence: UInt64
        var plaintextHex: String
        var datagramHex: String

        enum CodingKeys: String, CodingKey {
            case name
            case keyHex = "key_hex"
            case epoch, sender, incarnation, sequence
            case plaintextHex = "plaintext_hex"
            case datagramHex = "datagram_hex"
        }
    }

    struct RejectionVector: Codable {
        var name: String
        var datagramHex: String
        /// The counter name of the expected rejection (see `Envelope.Rejection.counterName`).
        var rejection: String

        enum CodingKeys: String, CodingKey {
            case name
            case datagramHex = "datagram_hex"
            case rejection
        }
    }

    static let a = PeerID(hex: "0123456789abcdef0123456789abcdef")!
    static let b = PeerID(hex: "fedcba9876543210fedcba9876543210")!
    static let film = ItemID("https://example.org/films/night.mkv")!

    /// One representative of every message type (and of each optional part).
    static var messages: [(String, PeerMessage)] {
        let stamp = Stamp(time: 5_000_000_000_000, origin: a, incarnation: 1_795_300_000_000_000, seq: 42)
        let ra = ReplicaID(peer: a, incarnation: 1_795_300_000_000_000), rb = ReplicaID(peer: b, incarnation: 9)
        let timeline = Timeline(phase: .playing, anchorTime: PeerTime(ns: 5_000_000_000_000), position: MediaPosition(clamping: 90_000_000_000), rate: 1.5)
        let metadata = ItemMetadata(title: "Night", artworkURL: "https://example.org/night.jpg", duration: .seconds(5_400))
        let seek = GroupOperation(
            stamp: stamp, heads: [OperationID(replica: ra, seq: 41), OperationID(replica: rb, seq: 17)], item: film, command: .seek(MediaPosition(clamping: 90_000_000_000)),
            by: "mpv", basis: a, at: PeerTime(ns: 5_000_000_000_000), originAt: PeerTime(ns: 5_000_000_000_000), result: timeline)
        let load = GroupOperation(
            stamp: Stamp(time: 4_000_000_000_000, origin: b, incarnation: 9, seq: 1), heads: [], item: film, command: .load(metadata), basis: a,
            at: PeerTime(ns: 4_000_000_000_000), originAt: PeerTime(ns: 3_999_987_654_321), basisBound: .microseconds(4))
        let start = GroupOperation(
            stamp: Stamp(time: 6_000_000_000_000, origin: b, incarnation: 9, seq: 2), heads: [OperationID(replica: rb, seq: 1)], item: film, command: .start,
            reason: .ready, basis: a, at: PeerTime(ns: 6_000_000_000_000), originAt: PeerTime(ns: 5_999_987_654_321), basisBound: .microseconds(4),
            result: Timeline(phase: .playing, anchorTime: PeerTime(ns: 6_000_000_000_000), position: .zero, rate: 1))
        let record = ItemRecord(
            item: film, metadata: metadata, timeline: timeline, clock: a, alternate: RelayedAnchor(via: b, anchorTime: PeerTime(ns: 4_999_987_654_321), bound: .microseconds(4)),
            action: .seek, reason: nil, by: "mpv", stamp: stamp)
        let estimate = ReportedEstimate(
            reference: PeerTime(ns: 4_000_000_000_000), offsetNs: -12_345_678.5, skewPPM: 42.25, errorBoundNs: 3_500, errorGrowthPPM: 0.5,
            hardBoundNs: 21_000, hardGrowthPPM: 1, delay: .microseconds(42), sampleCount: 200, lastSample: PeerTime(ns: 3_999_900_000_000))
        let digest = GroupDigest(entries: [.init(replicaHash: ra.wireHash, counter: 42), .init(replicaHash: rb.wireHash, counter: 17)].sorted { $0.replicaHash < $1.replicaHash }, fingerprint: 0x0123_4567_89ab_cdef)
        return [
            ("clock request", .clockRequest(exchange: 7, t1: PeerTime(ns: 1_000_000_123))),
            ("clock reply", .clockReply(exchange: 7, echo: 1_000_000_123, t2: PeerTime(ns: 31_000_050_000), t3: PeerTime(ns: 31_000_060_000))),
            ("clock follow-up (two-step reply)", .clockFollowUp(exchange: 7, echo: 1_000_000_123, t3: PeerTime(ns: 31_000_060_417))),
            ("clock result (the requester's half, for the replier)", .clockResult(exchange: 7, echo: 1_000_000_123, t1: PeerTime(ns: 1_000_000_140), t4: PeerTime(ns: 1_000_000_290))),
            ("interleaved request, its link's first (no result owed)", .interleavedRequest(exchange: 7, t1: PeerTime(ns: 1_000_000_123), result: nil)),
            (
                "interleaved request carrying the previous exchange's result",
                .interleavedRequest(
                    exchange: 8, t1: PeerTime(ns: 2_000_000_456), result: ExchangeResult(exchange: 7, echo: 1_000_000_123, t1: PeerTime(ns: 1_000_000_140), t4: PeerTime(ns: 1_000_000_290)))
            ),
            ("interleaved reply, no earlier transmit time", .interleavedReply(exchange: 7, echo: 1_000_000_123, t2: PeerTime(ns: 31_000_050_000), t3: PeerTime(ns: 31_000_060_000), followUp: nil)),
            (
                "interleaved reply carrying when the previous reply left",
                .interleavedReply(
                    exchange: 8, echo: 2_000_000_456, t2: PeerTime(ns: 32_000_050_000), t3: PeerTime(ns: 32_000_060_000),
                    followUp: ClockFollowUp(exchange: 7, echo: 1_000_000_123, t3: PeerTime(ns: 31_000_060_417)))
            ),
            ("hello asking for a reply", .hello(name: "living room", wantsReply: true)),
            ("goodbye", .goodbye),
            (
                "peer_addresses (IPv4 and IPv6)",
                .peerAddresses([
                    PeerAddress(peer: a, endpoint: .v4(a: 10, b: 77, c: 0, d: 2, port: 7362)),
                    PeerAddress(peer: b, endpoint: .v6(bytes: [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [2], port: 7362, scope: 0)),
                ])
            ),
            ("operation: a seek by a player, with two heads and the origin's result, asking for an ack", .operation(seek, wantsAck: true)),
            ("operation: a load from a peer that is not the basis", .operation(load, wantsAck: false)),
            ("operation: a start, with a reason", .operation(start, wantsAck: true)),
            ("operation: a play that waits, at 1.5x", .operation(GroupOperation(stamp: stamp, heads: [], item: film, command: .play(rate: 1.5, waits: true), basis: a, at: PeerTime(ns: 7), originAt: PeerTime(ns: 7)), wantsAck: true)),
            ("operation: stop", .operation(GroupOperation(stamp: stamp, heads: [], item: nil, command: .stop, basis: a, at: PeerTime(ns: 7), originAt: PeerTime(ns: 7)), wantsAck: true)),
            ("item register, with an alternate anchor", .itemRegister(record)),
            ("current register", .currentRegister(CurrentRecord(item: film, metadata: ItemMetadata(title: "Night"), by: "living room tv", stamp: stamp))),
            ("current register: stopped", .currentRegister(CurrentRecord(item: nil, stamp: stamp))),
            ("checkpoint vector: which operations the registers include", .checkpointVector([.init(replica: ra, counter: 42), .init(replica: rb, counter: 17)].sorted { $0.replica < $1.replica }, fingerprint: 0x0123_4567_89AB_CDEF)),
            ("ack", .ack(stamp.id)),
            ("digest", .digest(digest, wantsReply: true)),
            ("digest of an empty history", .digest(GroupDigest(entries: [], fingerprint: 0), wantsReply: false)),
            ("participant digest", .participantDigest([ParticipantDigest(peer: b, incarnation: 9, version: 3)], wantsReply: true)),
            ("participant digest: a middle part, covering the peers after a up to b", .participantDigest([ParticipantDigest(peer: b, incarnation: 9, version: 3)], after: a, more: true, wantsReply: false)),
            ("participant", .participant(ParticipantRecord(peer: b, incarnation: 9, version: 3, players: [
                PlayerStatus(playerID: 1, name: "mpv", itemHash: film.stableHash, readiness: .ready, outputLatency: .milliseconds(40), startLatency: .milliseconds(30)),
                PlayerStatus(playerID: 2, name: "kitchen speaker", itemHash: nil, solo: true, readiness: .buffering, suspensions: [.stallRecovery, .interruption]),
            ]))),
            ("clock report", .clockReport(ClockReport(entries: [.init(peer: b, incarnation: 9, estimate: estimate)]))),
            ("sync report", .syncReport(SyncReport(wantsReports: false, entries: [.init(playerID: 1, error: .microseconds(-180)), .init(playerID: 3, error: .milliseconds(12))]))),
            ("sync report asking for the receiver's, none of its own", .syncReport(SyncReport(wantsReports: true, entries: []))),
            ("epoch key", .epochKey(epoch: 2, key: Array(0..<32), removed: [b])),
            ("member key", .memberKey(key: Array(32..<64), name: "kitchen")),
            ("session offer", .sessionOffer(ephemeral: Array(0..<32))),
            ("session answer", .sessionAnswer(ephemeral: Array(32..<64), offer: Array(0..<32))),
            ("key ack", .keyAck(epoch: 2)),
            ("intake", .intake(.milliseconds(42))),
        ]
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
    static func bytes(_ hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var i = hex.startIndex
        while i < hex.endIndex {
            let j = hex.index(i, offsetBy: 2)
            out.append(UInt8(hex[i..<j], radix: 16)!)
            i = j
        }
        return out
    }

    static func load<T: Decodable>(_ name: String, as: T.Type) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(contentsOf: directory.appendingPathComponent(name)))
    }

    static func write(_ value: some Encodable, to name: String) throws {
        let e = JSONEncoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try (e.encode(value) + Data("\n".utf8)).write(to: directory.appendingPathComponent(name))
    }

    static let key = GroupKey(bytes: Array(repeating: 0x42, count: 32), epoch: 1)!

    static func envelopeVectors() -> [EnvelopeVector] {
        let sealer = EnvelopeSealer(sender: a, incarnation: 1_795_300_000_000_000, key: key)
        return [("first datagram: a clock request", PeerMessage.clockRequest(exchange: 1, t1: PeerTime(ns: 1_000))), ("second datagram: goodbye", .goodbye)].enumerated().map { i, v in
            let plaintext = v.1.encoded()
            return EnvelopeVector(name: v.0, keyHex: hex(key.bytes), epoch: 1, sender: a, incarnation: 1_795_300_000_000_000, sequence: UInt64(i + 1), plaintextHex: hex(plaintext), datagramHex: hex(sealer.seal(plaintext)))
        }
    }

    /// DNS-SD group tags (peer protocol §2): the group of ``key``, on two consecutive days.
    struct TagVector: Codable, Equatable {
        var name: String
        var keyHex: String
        var groupIDHex: String
        var day: Int64
        var tag: String

        enum CodingKeys: String, CodingKey {
            case name, day, tag
            case keyHex = "key_hex"
            case groupIDHex = "group_id_hex"
        }
    }

    static func tagVectors() -> [TagVector] {
        let g = GroupIdentity(name: "vectors", key: key)
        return [("2025-11-25", 20_417), ("2025-11-26", 20_418)].map { name, day in
            TagVector(name: name, keyHex: hex(key.bytes), groupIDHex: hex(g.idBytes), day: day, tag: g.tag(day: day))
        }
    }

    static func rejectionVectors(_ envelopes: [EnvelopeVector]) -> [RejectionVector] {
        let good = bytes(envelopes[0].datagramHex)
        var tampered = good
        tampered[tampered.count - 20] ^= 1
        var version2 = good
        version2[2] = 2
        var otherEpoch = good
        otherEpoch[3] = 9
        var version3 = good
        version3[2] = 3
        return [
            RejectionVector(name: "not Lockstep", datagramHex: hex(Array("hello".utf8)), rejection: "not_lockstep"),
            RejectionVector(name: "wire version 2 (before device keys and removal)", datagramHex: hex(version2), rejection: "unknown_version"),
            RejectionVector(name: "wire version 3 (before padding)", datagramHex: hex(version3), rejection: "unknown_version"),
            RejectionVector(name: "shorter than header and tag", datagramHex: hex(Array(good.prefix(40))), rejection: "too_short"),
            RejectionVector(name: "not one of the padded sizes", datagramHex: hex(Array(good.dropLast())), rejection: "bad_padding"),
            RejectionVector(name: "one ciphertext bit flipped", datagramHex: hex(tampered), rejection: "auth_failed"),
            RejectionVector(name: "key epoch not held", datagramHex: hex(otherEpoch), rejection: "unknown_key_epoch"),
        ]
    }

    @Test("every peer message encodes to its vector's bytes, and the bytes decode to the message")
    func messages() throws {
        if ProcessInfo.processInfo.environment["LOCKSTEP_WRITE_VECTORS"] == "1" {
            try Self.write(Self.messages.map { MessageVector(name: $0.0, message: PeerMessageJSON($0.1), hex: Self.hex($0.1.encoded())) }, to: "peer-messages.json")
            let envelopes = Self.envelopeVectors()
            try Self.write(envelopes, to: "envelopes.json")
            try Self.write(Self.rejectionVectors(envelopes), to: "rejections.json")
            try Self.write(Self.tagVectors(), to: "tags.json")
        }
        let vectors = try Self.load("peer-messages.json", as: [MessageVector].self)
        #expect(Set(vectors.map { MessageType($0.message.message) }).count == MessageType.allCases.count, "every message type has a vector")
        for v in vectors {
            #expect(Self.hex(v.message.message.encoded()) == v.hex, "\(v.name) encodes as the vector says")
            #expect(try PeerMessage.decode(Self.bytes(v.hex)) == v.message.message, "\(v.name) decodes to the vector's message")
        }
    }

    @Test("envelope vectors: sealing gives the vector's datagram, opening gives its plaintext")
    func envelopes() throws {
        let vectors = try Self.load("envelopes.json", as: [EnvelopeVector].self)
        #expect(vectors.count >= 2)
        let key = GroupKey(bytes: Self.bytes(vectors[0].keyHex), epoch: vectors[0].epoch)!
        let sealer = EnvelopeSealer(sender: vectors[0].sender, incarnation: vectors[0].incarnation, key: key)
        let opener = EnvelopeOpener(me: Self.b, keys: [key])
        for v in vectors {
            let sealed = sealer.seal(Self.bytes(v.plaintextHex))
            #expect(Self.hex(sealed) == v.datagramHex, "\(v.name): sealed bytes")
            let (header, plaintext) = try opener.open(Self.bytes(v.datagramHex))
            #expect(header.sequence == v.sequence)
            #expect(Self.hex(plaintext) == v.plaintextHex)
        }
    }

    @Test("tag vectors: the group id from the key, and the DNS-SD tag of each day from the group id")
    func tags() throws {
        let vectors = try Self.load("tags.json", as: [TagVector].self)
        #expect(vectors.count == 2)
        for v in vectors {
            let g = GroupIdentity(name: "vectors", key: GroupKey(bytes: Self.bytes(v.keyHex), epoch: 1)!)
            #expect(Self.hex(g.idBytes) == v.groupIDHex, "\(v.name): group id")
            #expect(GroupKey.tag(forGroupID: Self.bytes(v.groupIDHex), day: v.day) == v.tag, "\(v.name): tag")
        }
    }

    @Test("rejection vectors: each bad datagram is refused for the stated reason")
    func rejections() throws {
        let vectors = try Self.load("rejections.json", as: [RejectionVector].self)
        #expect(vectors.count >= 5)
        for v in vectors {
            let opener = EnvelopeOpener(me: Self.b, keys: [Self.key])
            do {
                _ = try opener.open(Self.bytes(v.datagramHex))
                Issue.record("\(v.name): accepted")
            } catch {
                #expect(error.counterName == v.rejection, "\(v.name)")
            }
        }
    }
}
