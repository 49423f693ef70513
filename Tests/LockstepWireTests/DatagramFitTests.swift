import LockstepCore
import Testing

@testable import LockstepPeerWire

/// Every peer message at its largest fits one datagram: the operation with the longest item and
/// metadata and the most inline heads, a join with the most heads, a digest of a 64-member group
/// (and the 80 entries a digest may carry), full registers, checkpoint vectors and participant
/// digests. A message that did not fit would not be sent at all.
@Suite("Datagram fit")
struct DatagramFitTests {
    static let far = PeerID(high: .max, low: .max)
    static let longest = ItemID(String(repeating: "é", count: ItemID.maxBytes / 2))!
    static let metadata = ItemMetadata(
        title: String(repeating: "T", count: ItemMetadata.maxTitleBytes), artworkURL: String(repeating: "a", count: ItemMetadata.maxArtworkBytes),
        duration: .seconds(1))
    static let stamp = Stamp(time: .max, origin: far, incarnation: .max, seq: .max)
    static func heads(_ n: Int) -> [OperationID] {
        (0..<n).map { OperationID(replica: ReplicaID(peer: PeerID(high: UInt64($0), low: 1), incarnation: .max), seq: .max) }
    }
    static let reason = CommandReason.other(String(repeating: "r", count: ItemRecord.maxReasonBytes))
    static let timeline = Timeline(phase: .waiting, anchorTime: PeerTime(ns: .max), position: .max, rate: 16)

    static var largest: [(String, PeerMessage)] {
        [
            ("a load with the longest item, full metadata, a reason, a result and every inline head",
             .operation(GroupOperation(stamp: stamp, heads: heads(GroupOperation.maxInlineHeads), item: longest, command: .load(metadata), reason: reason, by: String(repeating: "p", count: PlayerStatus.maxNameBytes), basis: far, at: PeerTime(ns: 1), originAt: PeerTime(ns: 1), basisBound: .seconds(10), result: timeline), wantsAck: true)),
            ("a hold with the longest item and reason", .operation(GroupOperation(stamp: stamp, heads: heads(GroupOperation.maxInlineHeads), item: longest, command: .hold(.custom(String(repeating: "s", count: PlayerStatus.maxReasonBytes))), reason: reason, basis: far, at: PeerTime(ns: 1), originAt: PeerTime(ns: 1), result: timeline), wantsAck: true)),
            ("a join with the most heads", .operation(GroupOperation(stamp: stamp, heads: heads(GroupOperation.maxHeads), item: nil, command: .join, basis: far, at: PeerTime(ns: 1), originAt: PeerTime(ns: 1)), wantsAck: true)),
            ("the fullest item register", .itemRegister(ItemRecord(item: longest, metadata: metadata, timeline: timeline, clock: far, alternate: RelayedAnchor(via: far, anchorTime: PeerTime(ns: 1), bound: .seconds(10)), action: .start, reason: reason, by: String(repeating: "p", count: PlayerStatus.maxNameBytes), stamp: stamp))),
            ("the fullest current register", .currentRegister(CurrentRecord(item: longest, metadata: metadata, by: String(repeating: "p", count: PlayerStatus.maxNameBytes), stamp: stamp))),
            ("a digest with every entry", .digest(GroupDigest(entries: (0..<GroupDigest.maxEntries).map { .init(replicaHash: UInt64($0), counter: .max) }, fingerprint: .max), wantsReply: true)),
            ("a full checkpoint vector", .checkpointVector(heads(PeerMessage.maxCheckpointEntries).map { .init(replica: $0.replica, counter: .max) }, fingerprint: .max)),
            ("a full participant digest", .participantDigest((0..<PeerMessage.maxParticipantDigests).map { ParticipantDigest(peer: PeerID(high: UInt64($0) + 1, low: 0), incarnation: .max, version: .max) }, after: PeerID(high: 0, low: 1), more: true, wantsReply: true)),
        ]
    }

    @Test("the largest message of each kind fits one envelope's plaintext")
    func largestFit() {
        for (name, message) in Self.largest {
            let bytes = message.encoded().count
            #expect(bytes <= Envelope.maxMessageBytes, "\(name): \(bytes) bytes, at most \(Envelope.maxMessageBytes)")
        }
    }

    @Test("a 64-member group's digest is one datagram: 16 bytes per replica")
    func digestOf64Members() {
        let replicas = (0..<64).map { ReplicaID(peer: PeerID(high: UInt64($0), low: 7), incarnation: 1_795_300_000_000_000) }
        var v = VersionVector()
        for (i, r) in replicas.enumerated() { v[r] = UInt64(i) * 1_000 + 1 }
        let entries = v.entries.map { GroupDigest.Entry(replicaHash: $0.replica.wireHash, counter: $0.counter) }.sorted { $0.replicaHash < $1.replicaHash }
        #expect(Set(entries.map(\.replicaHash)).count == 64, "no two replicas share a hash")
        let bytes = PeerMessage.digest(GroupDigest(entries: entries, fingerprint: 1), wantsReply: true).encoded().count
        #expect(bytes == 1 + 1 + 8 + 1 + 64 * 16)
        #expect(bytes <= Envelope.maxMessageBytes)
    }
}
