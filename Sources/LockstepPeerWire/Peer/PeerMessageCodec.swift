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
            Self.write(ClockFollowUp(exchange: exchange, echo: echo, t3: t3), into: &w)
        case .clockResult(let exchange, let echo, let t1, let t4):
            Self.write(ExchangeResult(exchange: exchange, echo: echo, t1: t1, t4: t4), into: &w)
        case .interleavedRequest(let exchange, let t1, let result):
            w.u32(exchange)
            w.i64(t1.ns)
            w.u8(result != nil ? 1 : 0)
            if let result { Self.write(result, into: &w) }
        case .interleavedReply(let exchange, let echo, let t2, let t3, let followUp):
            w.u32(exchange)
            w.i64(echo)
            w.i64(t2.ns)
            w.i64(t3.ns)
            w.u8(followUp != nil ? 1 : 0)
            if let followUp { Self.write(followUp, into: &w) }
        case .hello(let name, let wantsReply):
            w.u8(wantsReply ? 1 : 0)
            w.string(name.truncated(toUTF8: PeerMessage.maxNameBytes))
        case .goodbye:
            break
        case .peerAddresses(let entries):
            let kept = entries.prefix(PeerMessage.maxPeerAddresses)
            w.u8(UInt8(kept.count))
            for e in kept {
                w.raw(e.peer.bytes)
                switch e.endpoint {
                case .v4(let a, let b, let c, let d, let port):
                    w.u8(4)
                    w.raw([a, b, c, d])
                    w.u16(port)
                case .v6(let bytes, let port, _):
                    w.u8(6)
                    w.raw(bytes)
                    w.u16(port)
                }
            }
        case .operation(let op, let wantsAck):
            w.u8(wantsAck ? 1 : 0)
            Self.write(op, into: &w)
        case .itemRegister(let r):
            Self.write(r, into: &w)
        case .currentRegister(let r):
            w.u8(r.item != nil ? 1 : 0)
            if let item = r.item { w.string(item.value) }
            Self.write(r.metadata, into: &w)
            w.string(r.by ?? "")
            Self.write(r.stamp, into: &w)
        case .checkpointVector(let entries, let fingerprint):
            w.u64(fingerprint)
            let kept = entries.prefix(PeerMessage.maxCheckpointEntries)
            w.u8(UInt8(kept.count))
            for e in kept {
                w.raw(e.replica.peer.bytes)
                w.u64(e.replica.incarnation)
                w.u64(e.counter)
            }
        case .ack(let id):
            Self.write(id, into: &w)
        case .digest(let d, let wantsReply):
            w.u8(wantsReply ? 1 : 0)
            w.u64(d.fingerprint)
            let entries = d.entries.prefix(GroupDigest.maxEntries)
            w.u8(UInt8(entries.count))
            for e in entries {
                w.u64(e.replicaHash)
                w.u64(e.counter)
            }
        case .participantDigest(let ps, let after, let more, let wantsReply):
            w.u8((wantsReply ? 1 : 0) | (after != nil ? 2 : 0) | (more ? 4 : 0))
            if let after { w.raw(after.bytes) }
            let kept = ps.prefix(PeerMessage.maxParticipantDigests)
            w.u8(UInt8(kept.count))
            for p in kept {
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
        case .syncReport(let report):
            w.u8(report.wantsReports ? 1 : 0)
            let entries = report.entries.prefix(SyncReport.maxEntries)
            w.u8(UInt8(entries.count))
            for e in entries {
                w.u32(e.playerID)
                w.i64(e.error.ns)
            }
        case .intake(let span):
            w.i64(span.clamped(to: Limits.intakeNs).ns)
        case .epochKey(let epoch, let key, let removed):
            w.u32(epoch)
            w.raw(key)
            w.u8(UInt8(removed.count))
            for id in removed { w.raw(id.bytes) }
        case .memberKey(let key, let name):
            w.raw(key)
            w.string(name.truncated(toUTF8: PeerMessage.maxNameBytes))
        case .sessionOffer(let e):
            w.raw(e)
        case .sessionAnswer(let e, let offer):
            w.raw(e)
            w.raw(offer)
        case .keyAck(let epoch):
            w.u32(epoch)
        }
        return w.bytes
    }

    /// A requester's half of an exchange (`clock_result`, or an `interleaved_request`'s part).
    static func write(_ r: ExchangeResult, into w: inout ByteWriter) {
        w.u32(r.exchange)
        w.i64(r.echo)
        w.i64(r.t1.ns)
        w.i64(r.t4.ns)
    }

    /// A reply's transmit time (`clock_follow_up`, or an `interleaved_reply`'s part).
    static func write(_ f: ClockFollowUp, into w: inout ByteWriter) {
        w.u32(f.exchange)
        w.i64(f.echo)
        w.i64(f.t3.ns)
    }

    static func write(_ s: Stamp, into w: inout ByteWriter) {
        w.i64(s.time)
        w.raw(s.origin.bytes)
        w.u64(s.incarnation)
        w.u64(s.seq)
    }

    static func write(_ id: OperationID, into w: inout ByteWriter) {
        w.raw(id.replica.peer.bytes)
        w.u64(id.replica.incarnation)
        w.u64(id.seq)
    }

    static func write<I: ClockInstant>(_ t: Timeline<I>, into w: inout ByteWriter) {
        w.u8(t.phase.rawValue)
        w.i64(t.anchorTime.ns)
        w.i64(t.position.ns)
        w.f64(t.rate)
    }

    static func write(_ op: GroupOperation, into w: inout ByteWriter) {
        write(op.stamp, into: &w)
        let heads = op.heads.prefix(GroupOperation.maxHeads)
        w.u8(UInt8(heads.count))
        for h in heads { write(h, into: &w) }
        let flags: UInt8 = (op.item != nil ? 1 : 0) | (op.result != nil ? 2 : 0)
        w.u8(flags)
        if let item = op.item { w.string(item.value) }
        switch op.command {
        case .load(let m):
            w.u8(OperationCode.load.rawValue)
            write(m, into: &w)
        case .play(let rate, let waits):
            w.u8(OperationCode.play.rawValue)
            w.u8((rate != nil ? 1 : 0) | (waits ? 2 : 0))
            if let rate { w.f64(rate) }
        case .pause: w.u8(OperationCode.pause.rawValue)
        case .seek(let p):
            w.u8(OperationCode.seek.rawValue)
            w.i64(p.ns)
        case .rate(let r):
            w.u8(OperationCode.rate.rawValue)
            w.f64(r)
        case .hold(let reason):
            w.u8(OperationCode.hold.rawValue)
            w.string(reason.text)
        case .start: w.u8(OperationCode.start.rawValue)
        case .stop: w.u8(OperationCode.stop.rawValue)
        case .join: w.u8(OperationCode.join.rawValue)
        }
        w.string(op.reason?.text ?? "")
        w.string(op.by ?? "")
        w.raw(op.basis.bytes)
        w.i64(op.at.ns)
        w.i64(op.originAt.ns)
        w.i64(op.basisBound.ns)
        if let r = op.result { write(r, into: &w) }
    }

    static func write(_ m: ItemMetadata, into w: inout ByteWriter) {
        let flags: UInt8 = (m.title != nil ? 1 : 0) | (m.artworkURL != nil ? 2 : 0) | (m.duration != nil ? 4 : 0)
        w.u8(flags)
        if let t = m.title { w.string(t) }
        if let a = m.artworkURL { w.string(a) }
        if let d = m.duration { w.i64(d.ns) }
    }

    static func write(_ r: ItemRecord, into w: inout ByteWriter) {
        w.u8(r.alternate != nil ? 1 : 0)
        w.string(r.item.value)
        write(r.metadata, into: &w)
        write(r.timeline, into: &w)
        w.raw(r.clock.bytes)
        if let a = r.alternate {
            w.raw(a.via.bytes)
            w.i64(a.anchorTime.ns)
            w.i64(a.bound.ns)
        }
        w.u8(r.action.rawValue)
        w.string(r.reason?.text ?? "")
        w.string(r.by ?? "")
        write(r.stamp, into: &w)
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
            let followUp = try readFollowUp(&r)
            message = .clockFollowUp(exchange: followUp.exchange, echo: followUp.echo, t3: followUp.t3)
        case .clockResult:
            let result = try readResult(&r)
            message = .clockResult(exchange: result.exchange, echo: result.echo, t1: result.t1, t4: result.t4)
        case .interleavedRequest:
            let exchange = try r.u32("exchange"), t1 = PeerTime(ns: try r.i64("t1", within: Limits.instantNs))
            let flags = try readFlags(&r, allowed: 1)
            message = .interleavedRequest(exchange: exchange, t1: t1, result: flags & 1 != 0 ? try readResult(&r) : nil)
        case .interleavedReply:
            let exchange = try r.u32("exchange"), echo = try r.i64("t1")
            let t2 = PeerTime(ns: try r.i64("t2", within: Limits.instantNs)), t3 = PeerTime(ns: try r.i64("t3", within: Limits.instantNs))
            let flags = try readFlags(&r, allowed: 1)
            message = .interleavedReply(exchange: exchange, echo: echo, t2: t2, t3: t3, followUp: flags & 1 != 0 ? try readFollowUp(&r) : nil)
        case .hello:
            let flags = try readFlags(&r, allowed: 1)
            message = .hello(name: try r.string("name", limit: maxNameBytes), wantsReply: flags & 1 != 0)
        case .goodbye:
            message = .goodbye
        case .peerAddresses:
            let n = Int(try r.u8("addresses.count"))
            guard n <= maxPeerAddresses else { throw .tooLong(field: "addresses", limit: maxPeerAddresses) }
            var entries: [PeerAddress] = []
            for _ in 0..<n {
                let peer = try readPeer(&r, "address.peer")
                let endpoint: Endpoint
                switch try r.u8("address.family") {
                case 4:
                    let a = try r.raw(4, "address.ipv4")
                    endpoint = .v4(a: a[a.startIndex], b: a[a.startIndex + 1], c: a[a.startIndex + 2], d: a[a.startIndex + 3], port: try r.u16("address.port"))
                case 6:
                    endpoint = .v6(bytes: Array(try r.raw(16, "address.ipv6")), port: try r.u16("address.port"), scope: 0)
                default:
                    throw .invalid(field: "address.family")
                }
                // Canonical form only: sorted by peer, unique; and only addresses another
                // device can use (no port 0, IPv6 link-local, multicast, broadcast or unspecified).
                guard entries.last.map({ $0.peer < peer }) ?? true else { throw .invalid(field: "addresses") }
                guard PeerAddress.isPassable(endpoint) else { throw .invalid(field: "address.endpoint") }
                entries.append(PeerAddress(peer: peer, endpoint: endpoint))
            }
            message = .peerAddresses(entries)
        case .operation:
            let flags = try readFlags(&r, allowed: 1)
            message = .operation(try readOperation(&r), wantsAck: flags & 1 != 0)
        case .itemRegister:
            message = .itemRegister(try readItemRecord(&r))
        case .currentRegister:
            let flags = try readFlags(&r, allowed: 1)
            let item = flags & 1 != 0 ? try readItem(&r) : nil
            let metadata = try readMetadata(&r)
            let by = try readBy(&r)
            message = .currentRegister(CurrentRecord(item: item, metadata: metadata, by: by, stamp: try readStamp(&r)))
        case .checkpointVector:
            let fingerprint = try r.u64("fingerprint")
            let n = Int(try r.u8("entries.count"))
            guard n <= maxCheckpointEntries else { throw .tooLong(field: "entries", limit: maxCheckpointEntries) }
            var entries: [VersionVector.Entry] = []
            for _ in 0..<n {
                let id = try readOperationID(&r, "entry")
                // Canonical form only: sorted by replica, unique.
                guard entries.last.map({ $0.replica < id.replica }) ?? true else { throw .invalid(field: "entries") }
                entries.append(.init(replica: id.replica, counter: id.seq))
            }
            message = .checkpointVector(entries, fingerprint: fingerprint)
        case .ack:
            message = .ack(try readOperationID(&r, "ack"))
        case .digest:
            let flags = try readFlags(&r, allowed: 1)
            let fingerprint = try r.u64("fingerprint")
            let n = Int(try r.u8("entries.count"))
            guard n <= GroupDigest.maxEntries else { throw .tooLong(field: "entries", limit: GroupDigest.maxEntries) }
            var entries: [GroupDigest.Entry] = []
            for _ in 0..<n {
                let hash = try r.u64("entry.replica")
                let counter = try r.u64("entry.counter", within: Limits.counter)
                // Canonical form only: sorted, unique, non-zero.
                guard counter > 0, entries.last.map({ $0.replicaHash < hash }) ?? true else { throw .invalid(field: "entries") }
                entries.append(.init(replicaHash: hash, counter: counter))
            }
            message = .digest(GroupDigest(entries: entries, fingerprint: fingerprint), wantsReply: flags & 1 != 0)
        case .participantDigest:
            let flags = try readFlags(&r, allowed: 7)
            var after: PeerID?
            if flags & 2 != 0 { after = try readPeer(&r, "after") }
            let m = Int(try r.u8("participants.count"))
            guard m <= maxParticipantDigests else { throw .tooLong(field: "participants", limit: maxParticipantDigests) }
            var ps: [ParticipantDigest] = []
            for _ in 0..<m {
                let p = ParticipantDigest(peer: try readPeer(&r, "participant.peer"), incarnation: try r.u64("participant.incarnation", within: Limits.counter), version: try r.u64("participant.version", within: Limits.counter))
                // Canonical form only: sorted, unique, after `after`; a part followed by more ends
                // at its last entry, so it has one.
                guard (ps.last?.peer ?? after).map({ $0 < p.peer }) ?? true else { throw .invalid(field: "participants") }
                ps.append(p)
            }
            let more = flags & 4 != 0
            guard !more || !ps.isEmpty else { throw .invalid(field: "participants") }
            message = .participantDigest(ps, after: after, more: more, wantsReply: flags & 1 != 0)
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
        case .syncReport:
            let flags = try readFlags(&r, allowed: 1)
            let n = Int(try r.u8("entries.count"))
            guard n <= SyncReport.maxEntries else { throw .tooLong(field: "entries", limit: SyncReport.maxEntries) }
            var entries: [SyncReport.Entry] = []
            for _ in 0..<n {
                let player = try r.u32("entry.player")
                // Canonical form only: sorted by player, unique.
                guard entries.last.map({ $0.playerID < player }) ?? true else { throw .invalid(field: "entries") }
                entries.append(.init(playerID: player, error: .nanoseconds(try r.i64("entry.error", within: Limits.syncErrorNs))))
            }
            message = .syncReport(SyncReport(wantsReports: flags & 1 != 0, entries: entries))
        case .intake:
            message = .intake(.nanoseconds(try r.i64("intake", within: Limits.intakeNs)))
        case .epochKey:
            let epoch = try r.u32("epoch")
            let key = Array(try r.raw(32, "key"))
            let count = Int(try r.u8("removed.count"))
            guard count <= PeerMessage.maxRemovedPerKey else { throw .outOfRange(field: "removed.count", range: "0...\(PeerMessage.maxRemovedPerKey)") }
            var removed: [PeerID] = []
            for _ in 0..<count { removed.append(PeerID(high: try r.u64("removed"), low: try r.u64("removed"))) }
            message = .epochKey(epoch: epoch, key: key, removed: removed)
        case .sessionOffer:
            message = .sessionOffer(ephemeral: Array(try r.raw(32, "ephemeral")))
        case .sessionAnswer:
            message = .sessionAnswer(ephemeral: Array(try r.raw(32, "ephemeral")), offer: Array(try r.raw(32, "offer")))
        case .memberKey:
            message = .memberKey(key: Array(try r.raw(32, "key")), name: try r.string("name", limit: PeerMessage.maxNameBytes))
        case .keyAck:
            message = .keyAck(epoch: try r.u32("epoch"))
        }
        try r.expectEnd()
        return message
    }

    /// A message's flags byte. Undefined bits must be zero, as in the metadata and player flags:
    /// otherwise several byte strings would decode to the same message and the encoding would
    /// not be canonical (found by fuzzing: `Protocol/vectors/fuzz/peer`).
    /// A requester's half of an exchange (`clock_result`, or an `interleaved_request`'s part).
    static func readResult(_ r: inout ByteReader) throws(DecodeError) -> ExchangeResult {
        let exchange = try r.u32("exchange"), echo = try r.i64("echo")
        let t1 = try r.i64("t1", within: Limits.instantNs)
        // The reply came back after the request left, within the exchange timeout.
        let t4 = try r.i64("t4", within: t1...min(t1 + Limits.clockResultRoundTripNs, Limits.instantNs.upperBound))
        return ExchangeResult(exchange: exchange, echo: echo, t1: PeerTime(ns: t1), t4: PeerTime(ns: t4))
    }

    /// A reply's transmit time (`clock_follow_up`, or an `interleaved_reply`'s part); its echo
    /// is compared, never computed with, so any value decodes.
    static func readFollowUp(_ r: inout ByteReader) throws(DecodeError) -> ClockFollowUp {
        ClockFollowUp(exchange: try r.u32("exchange"), echo: try r.i64("t1"), t3: PeerTime(ns: try r.i64("t3", within: Limits.instantNs)))
    }

    static func readFlags(_ r: inout ByteReader, allowed: UInt8) throws(DecodeError) -> UInt8 {
        let flags = try r.u8("flags")
        guard flags & ~allowed == 0 else { throw .invalid(field: "flags") }
        return flags
    }

    static func readPeer(_ r: inout ByteReader, _ field: String) throws(DecodeError) -> PeerID {
        // Two big-endian words, as `PeerID(bytes:)` reads them: that one is generic and, across
        // modules, unspecialised, and at 64 peers it was 6 % of an agent's CPU.
        let high = try r.u64(field)
        return PeerID(high: high, low: try r.u64(field))
    }

    static func readStamp(_ r: inout ByteReader) throws(DecodeError) -> Stamp {
        let time = try r.i64("stamp.time", within: Limits.instantNs)
        let origin = try readPeer(&r, "stamp.origin")
        let incarnation = try r.u64("stamp.incarnation", within: Limits.counter)
        let seq = try r.u64("stamp.seq", within: 1...Limits.counter.upperBound)
        return Stamp(time: time, origin: origin, incarnation: incarnation, seq: seq)
    }

    static func readOperationID(_ r: inout ByteReader, _ field: String) throws(DecodeError) -> OperationID {
        let peer = try readPeer(&r, field + ".peer")
        let incarnation = try r.u64(field + ".incarnation", within: Limits.counter)
        let seq = try r.u64(field + ".seq", within: 1...Limits.counter.upperBound)
        return OperationID(replica: ReplicaID(peer: peer, incarnation: incarnation), seq: seq)
    }

    static func readTimeline(_ r: inout ByteReader) throws(DecodeError) -> Timeline<PeerTime> {
        guard let phase = TimelinePhase(rawValue: try r.u8("timeline.phase")) else { throw .invalid(field: "timeline.phase") }
        let anchor = try r.i64("timeline.anchor_time", within: Limits.instantNs)
        let position = try r.i64("timeline.position", within: Limits.positionNs)
        let rate = try r.f64("timeline.rate", within: Limits.rate)
        return Timeline(phase: phase, anchorTime: PeerTime(ns: anchor), position: MediaPosition(clamping: position), rate: rate)
    }

    /// A player's name (empty: none), as players name themselves.
    static func readBy(_ r: inout ByteReader) throws(DecodeError) -> String? {
        let by = try r.string("by", limit: PlayerStatus.maxNameBytes)
        return by.isEmpty ? nil : by
    }

    static func readReason(_ r: inout ByteReader) throws(DecodeError) -> CommandReason? {
        let reason = try r.string("reason", limit: ItemRecord.maxReasonBytes)
        // `waiting: REASON` names a suspension reason, at most PlayerStatus.maxReasonBytes: a
        // longer one would be cut short and sent on as another text (found by the fuzzer).
        if reason.hasPrefix(Self.waitingPrefix), reason.utf8.count - Self.waitingPrefix.utf8.count > PlayerStatus.maxReasonBytes {
            throw .tooLong(field: "reason.waiting", limit: PlayerStatus.maxReasonBytes)
        }
        return reason.isEmpty ? nil : CommandReason(text: reason)
    }

    private static let waitingPrefix = "waiting: "

    static func readOperation(_ r: inout ByteReader) throws(DecodeError) -> GroupOperation {
        let stamp = try readStamp(&r)
        let n = Int(try r.u8("heads.count"))
        guard n <= GroupOperation.maxHeads else { throw .tooLong(field: "heads", limit: GroupOperation.maxHeads) }
        var heads: [OperationID] = []
        for _ in 0..<n { heads.append(try readOperationID(&r, "head")) }
        let flags = try readFlags(&r, allowed: 3)
        let item = flags & 1 != 0 ? try readItem(&r) : nil
        guard let code = OperationCode(rawValue: try r.u8("command")) else { throw .invalid(field: "command") }
        let command: OperationCommand
        switch code {
        case .load: command = .load(try readMetadata(&r))
        case .play:
            let f = try r.u8("play.flags")
            guard f & ~3 == 0 else { throw .invalid(field: "play.flags") }
            command = .play(rate: f & 1 != 0 ? try r.f64("play.rate", within: Limits.rate) : nil, waits: f & 2 != 0)
        case .pause: command = .pause
        case .seek: command = .seek(MediaPosition(clamping: try r.i64("seek.position", within: Limits.positionNs)))
        case .rate: command = .rate(try r.f64("rate", within: Limits.rate))
        case .hold: command = .hold(SuspensionReason(text: try r.string("hold.reason", limit: PlayerStatus.maxReasonBytes)))
        case .start: command = .start
        case .stop: command = .stop
        case .join: command = .join
        }
        // Only a load, a stop or a join may come without an item; a join never has one.
        switch command {
        case .join: guard item == nil, flags & 2 == 0 else { throw .invalid(field: "item") }
        case .load, .play, .pause, .seek, .rate, .hold, .start: guard item != nil else { throw .invalid(field: "item") }
        case .stop: break
        }
        let reason = try readReason(&r)
        let by = try readBy(&r)
        if command == .join, by != nil { throw .invalid(field: "by") }
        let basis = try readPeer(&r, "basis")
        let at = try r.i64("at", within: Limits.instantNs)
        let originAt = try r.i64("origin_at", within: Limits.instantNs)
        let bound = try r.i64("basis_bound", within: Limits.relayBoundNs)
        let result = flags & 2 != 0 ? try readTimeline(&r) : nil
        return GroupOperation(
            stamp: stamp, heads: heads, item: item, command: command, reason: reason, by: by, basis: basis, at: PeerTime(ns: at),
            originAt: PeerTime(ns: originAt), basisBound: .nanoseconds(bound), result: result)
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
        let flags = try readFlags(&r, allowed: 1)
        let item = try readItem(&r)
        let metadata = try readMetadata(&r)
        let timeline = try readTimeline(&r)
        let clock = try readPeer(&r, "clock")
        var alternate: RelayedAnchor?
        if flags & 1 != 0 {
            alternate = RelayedAnchor(
                via: try readPeer(&r, "alternate.via"), anchorTime: PeerTime(ns: try r.i64("alternate.anchor_time", within: Limits.instantNs)),
                bound: .nanoseconds(try r.i64("alternate.bound", within: Limits.relayBoundNs)))
        }
        guard let action = Action(rawValue: try r.u8("action")) else { throw .invalid(field: "action") }
        let reason = try readReason(&r)
        let by = try readBy(&r)
        let stamp = try readStamp(&r)
        return ItemRecord(
            item: item, metadata: metadata, timeline: timeline, clock: clock, alternate: alternate, action: action, reason: reason, by: by, stamp: stamp)
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
