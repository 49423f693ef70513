import LockstepCore

// MARK: - Encoding

extension PeerMessage {
    /// The message's bytes (the plaintext of an envelope).
    public func encoded() -> [UInt8] {
        var w = ByteWriter()
        w.u8(MessageType(self).rawValue)
        switch self {
        case .clockRequest(let exchange, let t1):
            w.u32(exchange)
            w.i64(t1.ns)
        case .clockReply(let exchange, let echo, let t2, let t3):
            w.u32(exchange)
            w.i64(echo)
            w.i64(t2.ns)
            w.i64(t3.ns)
        case .clockFollowUp(let exchange, let echo, let t3):
            w.u32(exchange)
            w.i64(echo)
            w.i64(t3.ns)
        case .hello(let name, let wantsReply):
            w.u8(wantsReply ? 1 : 0)
            w.string(name.truncated(toUTF8: PeerMessage.maxNameBytes))
        case .goodbye:
            break
        case .itemRecord(let r, let relay, let wantsAck):
            w.u8((wantsAck ? 1 : 0) | (relay != nil ? 2 : 0))
            Self.write(r, into: &w)
            if let relay {
                w.i64(relay.anchorTime.ns)
                w.i64(relay.errorBound.ns)
            }
        case .currentRecord(let r, let wantsAck):
            w.u8((wantsAck ? 1 : 0) | (r.item != nil ? 2 : 0))
            if let item = r.item { w.string(item.value) }
            Self.write(r.metadata, into: &w)
            Self.write(r.stamp, into: &w)
            Self.write(r.version, into: &w)
        case .ack(let stamp):
            Self.write(stamp, into: &w)
        case .digest(let d, let participants, let wantsReply):
            w.u8((wantsReply ? 1 : 0) | (d.current != nil ? 2 : 0))
            if let c = d.current { Self.write(c, into: &w) }
            let items = d.items.prefix(PeerMessage.maxDigestItems)
            w.u8(UInt8(items.count))
            for e in items {
                w.u64(e.itemHash)
                Self.write(e.stamp, into: &w)
            }
            let ps = participants.prefix(PeerMessage.maxParticipantDigests)
            w.u8(UInt8(ps.count))
            for p in ps {
                w.raw(p.peer.bytes)
                w.u64(p.incarnation)
                w.u64(p.version)
            }
        case .participant(let p):
            w.raw(p.peer.bytes)
            w.u64(p.incarnation)
            w.u64(p.version)
            w.u8(UInt8(p.players.count))
            for s in p.players { Self.write(s, into: &w) }
        case .clockReport(let report):
            let entries = report.entries.prefix(PeerMessage.maxReportEntries)
            w.u8(UInt8(entries.count))
            for e in entries {
                w.raw(e.peer.bytes)
                w.u64(e.incarnation)
                let c = e.estimate
                w.i64(c.reference.ns)
                w.f64(c.offsetNs)
                w.f64(c.skewPPM)
                w.f64(c.errorBoundNs)
                w.f64(c.errorGrowthPPM)
                w.f64(c.hardBoundNs)
                w.f64(c.hardGrowthPPM)
                w.i64(c.delay.ns)
                w.u32(UInt32(clamping: c.sampleCount))
                w.i64(c.lastSample.ns)
            }
        case .keyUpdate(let epoch, let key):
            w.u32(epoch)
            w.raw(key)
        case .keyAck(let epoch):
            w.u32(epoch)
        }
        return w.bytes
    }

    static func write(_ s: Stamp, into w: inout ByteWriter) {
        w.u64(s.lamport)
        w.raw(s.origin.bytes)
        w.u64(s.incarnation)
    }

    static func write(_ v: VersionVector, into w: inout ByteWriter) {
        w.u8(UInt8(v.entries.count))
        for e in v.entries {
            w.raw(e.peer.bytes)
            w.u64(e.counter)
        }
    }

    static func write(_ m: ItemMetadata, into w: inout ByteWriter) {
        let flags: UInt8 = (m.title != nil ? 1 : 0) | (m.artworkURL != nil ? 2 : 0) | (m.duration != nil ? 4 : 0)
        w.u8(flags)
        if let t = m.title { w.string(t) }
        if let a = m.artworkURL { w.string(a) }
        if let d = m.duration { w.i64(d.ns) }
    }

    static func write(_ r: ItemRecord, into w: inout ByteWriter) {
        w.string(r.item.value)
        write(r.metadata, into: &w)
        w.u8(r.timeline.phase.rawValue)
        w.i64(r.timeline.anchorTime.ns)
        w.i64(r.timeline.position.ns)
        w.f64(r.timeline.rate)
        w.u8(r.action.rawValue)
        w.string(r.reason?.text ?? "")
        write(r.stamp, into: &w)
        write(r.version, into: &w)
    }

    static func write(_ s: PlayerStatus, into w: inout ByteWriter) {
        w.u32(s.playerID)
        w.string(s.name)
        w.u8((s.itemHash != nil ? 1 : 0) | (s.solo ? 2 : 0))
        if let h = s.itemHash { w.u64(h) }
        w.u8(s.readiness.rawValue)
        w.u8(UInt8(s.suspensions.count))
        for r in s.suspensions { w.string(r.text) }
        w.i64(s.outputLatency.ns)
        w.i64(s.startLatency.ns)
    }
}

// MARK: - Decoding

extension PeerMessage {
    /// Decodes a message, refusing anything malformed, oversized or with trailing bytes.
    public static func decode(_ bytes: [UInt8]) throws(DecodeError) -> PeerMessage {
        var r = ByteReader(bytes)
        let code = try r.u8("type")
        guard let type = MessageType(rawValue: code) else { throw .unknownType(code) }
        let message: PeerMessage
        switch type {
        case .clockRequest:
            message = .clockRequest(exchange: try r.u32("exchange"), t1: PeerTime(ns: try r.i64("t1", within: Limits.instantNs)))
        case .clockReply:
            message = .clockReply(
                exchange: try r.u32("exchange"), echo: try r.i64("t1"), t2: PeerTime(ns: try r.i64("t2", within: Limits.instantNs)),
                t3: PeerTime(ns: try r.i64("t3", within: Limits.instantNs)))
        case .clockFollowUp:
            message = .clockFollowUp(exchange: try r.u32("exchange"), echo: try r.i64("t1"), t3: PeerTime(ns: try r.i64("t3", within: Limits.instantNs)))
        case .hello:
            let flags = try readFlags(&r, allowed: 1)
            message = .hello(name: try r.string("name", limit: maxNameBytes), wantsReply: flags & 1 != 0)
        case .goodbye:
            message = .goodbye
        case .itemRecord:
            let flags = try readFlags(&r, allowed: 3)
            let record = try readItemRecord(&r)
            var relay: RelayAnchor?
            if flags & 2 != 0 {
                relay = RelayAnchor(
                    anchorTime: PeerTime(ns: try r.i64("relay.anchor_time", within: Limits.instantNs)),
                    errorBound: .nanoseconds(try r.i64("relay.error_bound", within: Limits.relayBoundNs)))
            }
            message = .itemRecord(record, relay: relay, wantsAck: flags & 1 != 0)
        case .currentRecord:
            let flags = try readFlags(&r, allowed: 3)
            var item: ItemID?
            if flags & 2 != 0 { item = try readItem(&r) }
            let metadata = try readMetadata(&r)
            let stamp = try readStamp(&r)
            let version = try readVersion(&r)
            message = .currentRecord(CurrentRecord(item: item, metadata: metadata, stamp: stamp, version: version), wantsAck: flags & 1 != 0)
        case .ack:
            message = .ack(stamp: try readStamp(&r))
        case .digest:
            let flags = try readFlags(&r, allowed: 3)
            let current = flags & 2 != 0 ? try readStamp(&r) : nil
            let n = Int(try r.u8("items.count"))
            guard n <= maxDigestItems else { throw .tooLong(field: "items", limit: maxDigestItems) }
            var items: [GroupDigest.Entry] = []
            for _ in 0..<n { items.append(.init(itemHash: try r.u64("item_hash"), stamp: try readStamp(&r))) }
            let m = Int(try r.u8("participants.count"))
            guard m <= maxParticipantDigests else { throw .tooLong(field: "participants", limit: maxParticipantDigests) }
            var ps: [ParticipantDigest] = []
            for _ in 0..<m {
                ps.append(ParticipantDigest(peer: try readPeer(&r, "participant.peer"), incarnation: try r.u64("participant.incarnation", within: Limits.counter), version: try r.u64("participant.version", within: Limits.counter)))
            }
            message = .digest(GroupDigest(current: current, items: items), participants: ps, wantsReply: flags & 1 != 0)
        case .participant:
            let peer = try readPeer(&r, "peer")
            let incarnation = try r.u64("incarnation", within: Limits.counter)
            let version = try r.u64("version", within: Limits.counter)
            let n = Int(try r.u8("players.count"))
            guard n <= ParticipantRecord.maxPlayers else { throw .tooLong(field: "players", limit: ParticipantRecord.maxPlayers) }
            var players: [PlayerStatus] = []
            for _ in 0..<n { players.append(try readPlayer(&r)) }
            message = .participant(ParticipantRecord(peer: peer, incarnation: incarnation, version: version, players: players))
        case .clockReport:
            let n = Int(try r.u8("entries.count"))
            guard n <= maxReportEntries else { throw .tooLong(field: "entries", limit: maxReportEntries) }
            var entries: [ClockReport.Entry] = []
            for _ in 0..<n {
                let peer = try readPeer(&r, "entry.peer")
                let incarnation = try r.u64("entry.incarnation", within: Limits.counter)
                let reference = try r.i64("entry.reference", within: Limits.instantNs)
                let offset = try r.f64("entry.offset", within: -Limits.reportOffsetNs...Limits.reportOffsetNs)
                let skew = try r.f64("entry.skew", within: Limits.reportSkewPPM)
                let bound = try r.f64("entry.error_bound", within: Limits.reportBoundNs)
                let growth = try r.f64("entry.error_growth", within: Limits.reportGrowthPPM)
                let hard = try r.f64("entry.hard_bound", within: Limits.reportBoundNs)
                let hardGrowth = try r.f64("entry.hard_growth", within: Limits.reportGrowthPPM)
                let delay = try r.i64("entry.delay", within: Limits.reportDelayNs)
                let samples = Int(try r.u32("entry.samples"))
                let last = try r.i64("entry.last_sample", within: Limits.instantNs)
                entries.append(ClockReport.Entry(peer: peer, incarnation: incarnation, estimate: ReportedEstimate(
                    reference: PeerTime(ns: reference), offsetNs: offset, skewPPM: skew, errorBoundNs: bound, errorGrowthPPM: growth,
                    hardBoundNs: hard, hardGrowthPPM: hardGrowth, delay: .nanoseconds(delay), sampleCount: samples, lastSample: PeerTime(ns: last))))
            }
            message = .clockReport(ClockReport(entries: entries))
        case .keyUpdate:
            message = .keyUpdate(epoch: try r.u32("epoch"), key: Array(try r.raw(32, "key")))
        case .keyAck:
            message = .keyAck(epoch: try r.u32("epoch"))
        }
        try r.expectEnd()
        return message
    }

    /// A message's flags byte. Undefined bits must be zero, as in the metadata and player flags:
    /// otherwise several byte strings would decode to the same message and the encoding would
    /// not be canonical (found by fuzzing: `Protocol/vectors/fuzz/peer`).
    static func readFlags(_ r: inout ByteReader, allowed: UInt8) throws(DecodeError) -> UInt8 {
        let flags = try r.u8("flags")
        guard flags & ~allowed == 0 else { throw .invalid(field: "flags") }
        return flags
    }

    static func readPeer(_ r: inout ByteReader, _ field: String) throws(DecodeError) -> PeerID {
        PeerID(bytes: try r.raw(16, field))!
    }

    static func readStamp(_ r: inout ByteReader) throws(DecodeError) -> Stamp {
        Stamp(lamport: try r.u64("stamp.lamport", within: Limits.counter), origin: try readPeer(&r, "stamp.origin"), incarnation: try r.u64("stamp.incarnation", within: Limits.counter))
    }

    static func readVersion(_ r: inout ByteReader) throws(DecodeError) -> VersionVector {
        let n = Int(try r.u8("version.count"))
        guard n <= VersionVector.maxEntries else { throw .tooLong(field: "version", limit: VersionVector.maxEntries) }
        var entries: [VersionVector.Entry] = []
        var previous: PeerID?
        for _ in 0..<n {
            let peer = try readPeer(&r, "version.peer")
            let counter = try r.u64("version.counter", within: Limits.counter)
            // Canonical form only: sorted, unique, non-zero. Anything else would not round-trip.
            guard counter > 0, previous.map({ $0 < peer }) ?? true else { throw .invalid(field: "version") }
            previous = peer
            entries.append(.init(peer: peer, counter: counter))
        }
        return VersionVector(entries)
    }

    static func readItem(_ r: inout ByteReader) throws(DecodeError) -> ItemID {
        let s = try r.string("item", limit: ItemID.maxBytes)
        guard let item = ItemID(s) else { throw .invalid(field: "item") }
        return item
    }

    static func readMetadata(_ r: inout ByteReader) throws(DecodeError) -> ItemMetadata {
        let flags = try r.u8("metadata.flags")
        guard flags & ~7 == 0 else { throw .invalid(field: "metadata.flags") }
        let title = flags & 1 != 0 ? try r.string("metadata.title", limit: ItemMetadata.maxTitleBytes) : nil
        let artwork = flags & 2 != 0 ? try r.string("metadata.artwork", limit: ItemMetadata.maxArtworkBytes) : nil
        let duration = flags & 4 != 0 ? try r.i64("metadata.duration", within: Limits.positionNs) : nil
        return ItemMetadata(title: title, artworkURL: artwork, duration: duration.map { .nanoseconds($0) })
    }

    static func readItemRecord(_ r: inout ByteReader) throws(DecodeError) -> ItemRecord {
        let item = try readItem(&r)
        let metadata = try readMetadata(&r)
        guard let phase = TimelinePhase(rawValue: try r.u8("timeline.phase")) else { throw .invalid(field: "timeline.phase") }
        let anchor = try r.i64("timeline.anchor_time", within: Limits.instantNs)
        let position = try r.i64("timeline.position", within: Limits.positionNs)
        let rate = try r.f64("timeline.rate", within: Limits.rate)
        guard let action = Action(rawValue: try r.u8("action")) else { throw .invalid(field: "action") }
        let reason = try r.string("reason", limit: ItemRecord.maxReasonBytes)
        let stamp = try readStamp(&r)
        let version = try readVersion(&r)
        let timeline = Timeline(phase: phase, anchorTime: PeerTime(ns: anchor), position: MediaPosition(clamping: position), rate: rate)
        return ItemRecord(
            item: item, metadata: metadata, timeline: timeline, action: action, reason: reason.isEmpty ? nil : CommandReason(text: reason), stamp: stamp,
            version: version)
    }

    static func readPlayer(_ r: inout ByteReader) throws(DecodeError) -> PlayerStatus {
        let id = try r.u32("player.id")
        let name = try r.string("player.name", limit: PlayerStatus.maxNameBytes)
        let flags = try r.u8("player.flags")
        guard flags & ~3 == 0 else { throw .invalid(field: "player.flags") }
        let hash = flags & 1 != 0 ? try r.u64("player.item_hash") : nil
        guard let readiness = PlayerStatus.Readiness(rawValue: try r.u8("player.readiness")) else { throw .invalid(field: "player.readiness") }
        let n = Int(try r.u8("player.suspensions.count"))
        guard n <= PlayerStatus.maxSuspensions else { throw .tooLong(field: "player.suspensions", limit: PlayerStatus.maxSuspensions) }
        var reasons: [String] = []
        for _ in 0..<n { reasons.append(try r.string("player.suspension", limit: PlayerStatus.maxReasonBytes)) }
        let output = try r.i64("player.output_latency", within: Limits.latencyNs)
        let start = try r.i64("player.start_latency", within: Limits.latencyNs)
        return PlayerStatus(
            playerID: id, name: name, itemHash: hash, solo: flags & 2 != 0, readiness: readiness, suspensions: reasons.map(SuspensionReason.init(text:)),
            outputLatency: .nanoseconds(output), startLatency: .nanoseconds(start))
    }
}
