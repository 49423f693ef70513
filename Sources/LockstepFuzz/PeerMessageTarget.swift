import LockstepCore
import LockstepPeerWire

/// `PeerMessage.decode` on arbitrary plaintext. Properties:
/// - it returns or throws a `DecodeError`, never traps;
/// - what it accepts is canonical: the message re-encodes to exactly the input bytes, so one
///   message has one encoding (and decoding that encoding gives the same message back).
enum PeerMessageTarget {
    static func run(_ bytes: [UInt8]) {
        if PairingMessage.isPairing(bytes) { return runPairing(bytes) }
        let message: PeerMessage
        do {
            message = try PeerMessage.decode(bytes)
        } catch {
            return
        }
        let encoded = message.encoded()
        let again: PeerMessage
        do {
            again = try PeerMessage.decode(encoded)
        } catch {
            fatalError("peer: \(message) re-encodes to bytes that do not decode (\(error)): \(hex(encoded))")
        }
        require(again == message, "peer: decode(encode(m)) != m\n  m:     \(message)\n  again: \(again)")
        require(again.encoded() == encoded, "peer: re-encoding \(message) is not stable")
        require(encoded == bytes, "peer: accepted a non-canonical encoding of \(message)\n  input:      \(hex(bytes))\n  re-encoded: \(hex(encoded))")
    }

    /// The same properties for pairing datagrams (which share the first bytes' space: "LP").
    static func runPairing(_ bytes: [UInt8]) {
        guard let message = try? PairingMessage.decode(bytes) else { return }
        let encoded = message.encoded()
        require((try? PairingMessage.decode(encoded)) == message, "pairing: decode(encode(m)) != m for \(message)")
        require(encoded == bytes, "pairing: accepted a non-canonical encoding of \(message)\n  input:      \(hex(bytes))\n  re-encoded: \(hex(encoded))")
    }

    static var seeds: [(name: String, bytes: [UInt8])] {
        SampleMessages.all.map { ($0.name, $0.message.encoded()) } + [
            ("pairing-start", PairingMessage.start(session: 1, spake: Array(0..<32)).encoded()),
            ("pairing-reply", PairingMessage.reply(session: 2, spake: Array(0..<32), confirm: Array(32..<64)).encoded()),
            ("pairing-finish", PairingMessage.finish(session: 3, confirm: Array(0..<32), sealed: Array(0..<60)).encoded()),
            ("pairing-welcome", PairingMessage.welcome(session: 4, sealed: Array(0..<80)).encoded()),
            ("pairing-refused", PairingMessage.refused(session: 5, reason: .noInvite).encoded()),
        ]
    }
}

/// A representative message of every type, small and large: the seeds of the peer and envelope targets.
enum SampleMessages {
    static let alice = PeerID(high: 0x0123_4567_89ab_cdef, low: 0x0011_2233_4455_6677)
    static let bob = PeerID(high: 0x7654_3210_fedc_ba98, low: 1)
    static let carol = PeerID(high: UInt64.max, low: UInt64.max)

    static var all: [(name: String, message: PeerMessage)] {
        let peers = (0..<GroupOperation.maxHeads).map { PeerID(high: UInt64($0) << 58, low: UInt64($0) + 1) }
        let stamp = Stamp(time: 1_700_000_000_000_000_000, origin: alice, incarnation: 3, seq: 42)
        let maxCounter = Limits.counter.upperBound
        let bigStamp = Stamp(time: Limits.instantNs.upperBound, origin: carol, incarnation: maxCounter, seq: maxCounter)
        let item = ItemID("https://example.com/films/big-buck-bunny.mp4")!
        let longItem = ItemID(String(repeating: "é", count: ItemID.maxBytes / 2))!
        let fullMetadata = ItemMetadata(
            title: String(repeating: "T", count: ItemMetadata.maxTitleBytes),
            artworkURL: "https://example.com/" + String(repeating: "a", count: ItemMetadata.maxArtworkBytes - 20),
            duration: .seconds(596))
        let heads = peers.enumerated().map { OperationID(replica: ReplicaID(peer: $1, incarnation: maxCounter), seq: UInt64($0) + 1) }
        let playing = Timeline(phase: .playing, anchorTime: PeerTime(ns: 1_000_000_000), position: MediaPosition(clamping: 5_000_000_000), rate: 1)
        let op = GroupOperation(
            stamp: stamp, heads: [OperationID(replica: ReplicaID(peer: alice, incarnation: 3), seq: 41)], item: item, command: .seek(MediaPosition(clamping: 100_000_000_000)),
            basis: alice, at: PeerTime(ns: 1_000_000_000), originAt: PeerTime(ns: 1_000_000_000), result: playing)
        let fullOp = GroupOperation(
            stamp: bigStamp, heads: Array(heads.prefix(GroupOperation.maxInlineHeads)), item: longItem, command: .load(fullMetadata),
            reason: .other(String(repeating: "r", count: ItemRecord.maxReasonBytes)), by: String(repeating: "p", count: PlayerStatus.maxNameBytes), basis: bob, at: PeerTime(ns: Limits.instantNs.lowerBound),
            originAt: PeerTime(ns: Limits.instantNs.upperBound), basisBound: .nanoseconds(Limits.relayBoundNs.upperBound),
            result: Timeline(phase: .waiting, anchorTime: PeerTime(ns: Limits.instantNs.lowerBound), position: .max, rate: Limits.rate.upperBound))
        let join = GroupOperation(
            stamp: bigStamp, heads: heads, item: nil, command: .join, basis: bob, at: PeerTime(ns: 0), originAt: PeerTime(ns: 0))
        let record = ItemRecord(item: item, timeline: playing, clock: alice, action: .play, stamp: stamp)
        let fullRecord = ItemRecord(
            item: longItem, metadata: fullMetadata,
            timeline: Timeline(phase: .waiting, anchorTime: PeerTime(ns: Limits.instantNs.lowerBound), position: .max, rate: Limits.rate.upperBound),
            clock: carol, alternate: RelayedAnchor(via: bob, anchorTime: PeerTime(ns: Limits.instantNs.upperBound), bound: .nanoseconds(Limits.relayBoundNs.upperBound)),
            action: .start, reason: .other(String(repeating: "r", count: ItemRecord.maxReasonBytes)), stamp: bigStamp)
        let player = PlayerStatus(playerID: 1, name: "mpv", itemHash: item.stableHash, readiness: .ready)
        let fullPlayer = PlayerStatus(
            playerID: .max, name: String(repeating: "n", count: PlayerStatus.maxNameBytes), itemHash: .max, solo: true,
            readiness: .buffering,
            suspensions: Array(repeating: .custom(String(repeating: "s", count: PlayerStatus.maxReasonBytes)), count: PlayerStatus.maxSuspensions),
            outputLatency: .nanoseconds(Limits.latencyNs.upperBound), startLatency: .milliseconds(20))
        let estimate = ReportedEstimate(
            reference: PeerTime(ns: 123_456_789), offsetNs: -1_234.5, skewPPM: 12.5, errorBoundNs: 800, errorGrowthPPM: 1,
            hardBoundNs: 40_000, hardGrowthPPM: 2, delay: .microseconds(80), sampleCount: 16, lastSample: PeerTime(ns: 123_000_000))
        let digestEntries = (0..<GroupDigest.maxEntries).map { GroupDigest.Entry(replicaHash: UInt64($0) &* 0x9e37_79b9_7f4a_7c15 | 1, counter: UInt64($0) + 1) }
            .sorted { $0.replicaHash < $1.replicaHash }
        let participantDigests = (0..<PeerMessage.maxParticipantDigests).map { ParticipantDigest(peer: PeerID(high: 9, low: UInt64($0)), incarnation: 2, version: UInt64($0)) }
        return [
            ("clock-request", .clockRequest(exchange: 7, t1: PeerTime(ns: 1_700_000_000_000_000_000))),
            ("clock-reply", .clockReply(exchange: 7, echo: 1, t2: PeerTime(ns: 2), t3: PeerTime(ns: 3))),
            ("clock-reply-extremes", .clockReply(exchange: .max, echo: .min, t2: PeerTime(ns: Limits.instantNs.upperBound), t3: PeerTime(ns: -1))),
            ("clock-follow-up", .clockFollowUp(exchange: 7, echo: 1, t3: PeerTime(ns: 4))),
            ("clock-result", .clockResult(exchange: 7, echo: 1, t1: PeerTime(ns: 2), t4: PeerTime(ns: 9))),
            ("interleaved-request", .interleavedRequest(exchange: 8, t1: PeerTime(ns: 20), result: ExchangeResult(exchange: 7, echo: 1, t1: PeerTime(ns: 2), t4: PeerTime(ns: 9)))),
            ("interleaved-request-first", .interleavedRequest(exchange: 1, t1: PeerTime(ns: 20), result: nil)),
            ("interleaved-reply", .interleavedReply(exchange: 8, echo: 20, t2: PeerTime(ns: 25), t3: PeerTime(ns: 26), followUp: ClockFollowUp(exchange: 7, echo: 1, t3: PeerTime(ns: 4)))),
            ("interleaved-reply-first", .interleavedReply(exchange: 1, echo: 20, t2: PeerTime(ns: 25), t3: PeerTime(ns: 26), followUp: nil)),
            ("hello", .hello(name: "living-room", wantsReply: false)),
            ("hello-wants-reply", .hello(name: "kitchen 🍳", wantsReply: true)),
            ("hello-longest-name", .hello(name: String(repeating: "ü", count: PeerMessage.maxNameBytes / 2), wantsReply: true)),
            ("goodbye", .goodbye),
            ("operation", .operation(op, wantsAck: true)),
            ("operation-play", .operation(GroupOperation(stamp: stamp, heads: [], item: item, command: .play(rate: 1.5, waits: true), basis: alice, at: PeerTime(ns: 7), originAt: PeerTime(ns: 7)), wantsAck: false)),
            ("operation-hold", .operation(GroupOperation(stamp: stamp, heads: [], item: item, command: .hold(.stallRecovery), reason: .waiting(.stallRecovery), basis: alice, at: PeerTime(ns: 7), originAt: PeerTime(ns: 7)), wantsAck: false)),
            ("operation-stop", .operation(GroupOperation(stamp: stamp, heads: [], item: nil, command: .stop, basis: alice, at: PeerTime(ns: 7), originAt: PeerTime(ns: 7)), wantsAck: false)),
            ("operation-full", .operation(fullOp, wantsAck: true)),
            ("operation-join", .operation(join, wantsAck: true)),
            ("item-register", .itemRegister(record)),
            ("item-register-full", .itemRegister(fullRecord)),
            ("current-register", .currentRegister(CurrentRecord(item: item, metadata: ItemMetadata(title: "Big Buck Bunny"), stamp: stamp))),
            ("current-register-stopped", .currentRegister(CurrentRecord(item: nil, stamp: bigStamp))),
            ("current-register-full", .currentRegister(CurrentRecord(item: longItem, metadata: fullMetadata, stamp: bigStamp))),
            ("checkpoint-vector", .checkpointVector([.init(replica: ReplicaID(peer: alice, incarnation: 3), counter: 42)], fingerprint: 0x0123_4567_89AB_CDEF)),
            ("checkpoint-vector-full", .checkpointVector(heads.map { VersionVector.Entry(replica: $0.replica, counter: maxCounter) }.prefix(PeerMessage.maxCheckpointEntries).sorted { $0.replica < $1.replica }, fingerprint: .max)),
            ("ack", .ack(stamp.id)),
            ("digest-empty", .digest(GroupDigest(entries: [], fingerprint: 0), wantsReply: false)),
            ("digest", .digest(GroupDigest(entries: [.init(replicaHash: ReplicaID(peer: alice, incarnation: 3).wireHash, counter: 42)], fingerprint: 0xfeed), wantsReply: true)),
            ("digest-full", .digest(GroupDigest(entries: digestEntries, fingerprint: .max), wantsReply: true)),
            ("participant-digest", .participantDigest([ParticipantDigest(peer: bob, incarnation: 1, version: 3)], wantsReply: true)),
            ("participant-digest-full", .participantDigest(participantDigests, wantsReply: false)),
            ("participant-empty", .participant(ParticipantRecord(peer: bob, incarnation: 1, version: 0, players: []))),
            ("participant", .participant(ParticipantRecord(peer: alice, incarnation: 3, version: 9, players: [player]))),
            ("participant-full", .participant(ParticipantRecord(peer: carol, incarnation: maxCounter, version: maxCounter, players: Array(repeating: fullPlayer, count: ParticipantRecord.maxPlayers)))),
            ("clock-report-empty", .clockReport(ClockReport(entries: []))),
            ("clock-report", .clockReport(ClockReport(entries: [.init(peer: bob, incarnation: 2, estimate: estimate)]))),
            ("clock-report-full", .clockReport(ClockReport(entries: (0..<PeerMessage.maxReportEntries).map { .init(peer: peers[$0 % peers.count], incarnation: UInt64($0), estimate: estimate) }))),
            ("sync-report-ask", .syncReport(SyncReport(wantsReports: true, entries: []))),
            ("sync-report-full", .syncReport(SyncReport(wantsReports: false, entries: (0..<UInt32(SyncReport.maxEntries)).map {
                .init(playerID: $0, error: .nanoseconds($0 % 2 == 0 ? Limits.syncErrorNs.lowerBound : Limits.syncErrorNs.upperBound))
            }))),
            ("epoch-key", .epochKey(epoch: 2, key: Array(0..<32), removed: [bob])),
            ("epoch-key-full", .epochKey(epoch: .max, key: Array(0..<32), removed: Array(repeating: carol, count: PeerMessage.maxRemovedPerKey))),
            ("member-key", .memberKey(key: Array(32..<64), name: "living room")),
            ("session-offer", .sessionOffer(ephemeral: Array(0..<32))),
            ("session-answer", .sessionAnswer(ephemeral: Array(32..<64), offer: Array(0..<32))),
            ("key-ack", .keyAck(epoch: .max)),
            ("intake-none", .intake(.zero)),
            ("intake-max", .intake(.nanoseconds(Limits.intakeNs.upperBound))),
        ]
    }
}
