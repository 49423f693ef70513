/// A change to the group state, for the coordinator and for watchers.
public struct GroupChange: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// An item's timeline changed.
        case item(ItemRecord)
        /// The group's current item changed.
        case current(CurrentRecord)
    }

    public var kind: Kind
    /// Issued by this node (as opposed to received).
    public var local: Bool

    public init(kind: Kind, local: Bool) {
        self.kind = kind
        self.local = local
    }
}

/// A transport command, as a user (or a player's UI) gives it.
public enum GroupCommand: Sendable, Equatable {
    /// Make `item` the group's item; its timeline starts paused at 0 if it has none yet.
    case load(ItemID, ItemMetadata)
    /// Play (at `rate`, or the group's current rate).
    case play(rate: Double?)
    case pause
    /// Move to a media position (ns), keeping playing or paused.
    case seek(position: Int64)
    case setRate(Double)
    /// The group plays nothing.
    case stop

    public var action: Action {
        switch self {
        case .load: .load
        case .play: .play
        case .pause: .pause
        case .seek: .seek
        case .setRate: .setRate
        case .stop: .stop
        }
    }
}

/// Why a command could not be issued.
public enum CommandError: Error, Sendable, Equatable, CustomStringConvertible {
    case noItem
    case invalidRate(Double)
    case invalidPosition(Int64)
    /// The item's timeline comes from a peer whose clock is not estimated yet.
    case clockUnknown(PeerID)

    public var description: String {
        switch self {
        case .noItem: "the group has no item; load one first"
        case .invalidRate(let r): "rate \(r) is outside \(Timeline.rateRange)"
        case .invalidPosition(let p): "position \(p) ns is negative"
        case .clockUnknown(let p): "the clock of \(p.short), who set the timeline, is not estimated yet"
        }
    }
}

extension Node {
    // MARK: - Commands

    /// Issues `command` for `item` (default: the group's current item), anchored `lead` in the
    /// future when it moves a playing timeline. Returns the directives and the new record.
    public mutating func issue(_ command: GroupCommand, item: ItemID? = nil, reason: String? = nil, now: Int64) -> ([NodeDirective], Result<ItemRecord?, CommandError>) {
        switch command {
        case .load(let id, let metadata):
            var out: [NodeDirective] = []
            let (stamp, version) = replica.nextStamp()
            let current = CurrentRecord(item: id, metadata: metadata, stamp: stamp, version: version)
            out += broadcast(.current(current), now: now)
            out.append(.groupChanged(GroupChange(kind: .current(current), local: true)))
            if replica.state.items[id] == nil {
                let (s2, v2) = replica.nextStamp()
                let record = ItemRecord(item: id, metadata: metadata, timeline: Timeline(phase: .paused, anchorTime: now, position: 0, rate: 1), action: .load, reason: reason, stamp: s2, version: v2)
                out += broadcast(.item(record), now: now)
                out.append(.groupChanged(GroupChange(kind: .item(record), local: true)))
                return (out, .success(record))
            }
            return (out, .success(nil))
        case .stop:
            var out: [NodeDirective] = []
            let target = item ?? replica.state.current?.item
            let (stamp, version) = replica.nextStamp()
            let current = CurrentRecord(item: nil, stamp: stamp, version: version)
            out += broadcast(.current(current), now: now)
            out.append(.groupChanged(GroupChange(kind: .current(current), local: true)))
            guard let target, let existing = replica.state.items[target] else { return (out, .success(nil)) }
            let (s2, v2) = replica.nextStamp()
            let record = ItemRecord(item: target, metadata: existing.metadata, timeline: Timeline(phase: .stopped, anchorTime: now, position: 0, rate: existing.timeline.rate), action: .stop, reason: reason, stamp: s2, version: v2)
            out += broadcast(.item(record), now: now)
            out.append(.groupChanged(GroupChange(kind: .item(record), local: true)))
            return (out, .success(record))
        default:
            guard let id = item ?? replica.state.current?.item, let existing = replica.state.items[id] else { return ([], .failure(.noItem)) }
            guard let current = localTimeline(of: existing, now: now) else { return ([], .failure(.clockUnknown(existing.stamp.origin))) }
            let timeline: Timeline
            switch timelineFor(command, from: current, nominalRate: existing.timeline.rate, item: id, immediately: reason == "play-immediately", now: now) {
            case .success(let t): timeline = t
            case .failure(let e): return ([], .failure(e))
            }
            let (stamp, version) = replica.nextStamp()
            let record = ItemRecord(item: id, metadata: existing.metadata, timeline: timeline, action: command.action, reason: reason, stamp: stamp, version: version)
            var out = broadcast(.item(record), now: now)
            out.append(.groupChanged(GroupChange(kind: .item(record), local: true)))
            return (out, .success(record))
        }
    }

    /// The new timeline (on the local clock) that `command` makes of `current` (the group's
    /// timeline on the local clock, which may advance at the origin's pace, `nominalRate` scaled).
    ///
    /// `play` waits (a waiting timeline) while participants on the item are not ready, unless
    /// `immediately`; the start then follows when they are (see ``refreshPlayers(now:)``).
    func timelineFor(_ command: GroupCommand, from current: Timeline, nominalRate: Double, item: ItemID, immediately: Bool = false, now: Int64) -> Result<Timeline, CommandError> {
        let at = now + leadTime(for: item, now: now)
        switch command {
        case .play(let rate):
            let r = rate ?? nominalRate
            guard Timeline.rateRange.contains(r) else { return .failure(.invalidRate(r)) }
            if current.phase == .playing && r == nominalRate { return .success(current) }
            let position = current.phase == .playing ? current.position(at: at) : current.position
            if current.phase != .playing && !immediately && !blockers(on: item).isEmpty {
                return .success(Timeline(phase: .waiting, anchorTime: now, position: position, rate: r))
            }
            return .success(Timeline(phase: .playing, anchorTime: at, position: position, rate: r))
        case .pause:
            if current.phase == .playing {
                return .success(Timeline(phase: .paused, anchorTime: at, position: current.position(at: at), rate: nominalRate))
            }
            return .success(Timeline(phase: .paused, anchorTime: now, position: current.position, rate: nominalRate))
        case .seek(let position):
            guard position >= 0 else { return .failure(.invalidPosition(position)) }
            if current.phase == .playing {
                return .success(Timeline(phase: .playing, anchorTime: at, position: position, rate: nominalRate))
            }
            return .success(Timeline(phase: current.phase == .stopped ? .paused : current.phase, anchorTime: now, position: position, rate: nominalRate))
        case .setRate(let r):
            guard Timeline.rateRange.contains(r) else { return .failure(.invalidRate(r)) }
            if current.phase == .playing {
                return .success(Timeline(phase: .playing, anchorTime: at, position: current.position(at: at), rate: r))
            }
            return .success(Timeline(phase: current.phase, anchorTime: now, position: current.position, rate: r))
        case .load, .stop:
            return .success(current)
        }
    }

    /// How far ahead to anchor a command for `item` (see ``LeadTime``).
    public func leadTime(for item: ItemID?, now: Int64) -> Int64 {
        var terms: [LeadTime.Term] = []
        let hash = item?.stableHash
        for peer in membership.reachable {
            let players = participants[peer]?.players ?? []
            // Peers with players on other items are not waited for; peers with none still are
            // (their state must arrive in time even if nothing plays there yet).
            if let hash, !players.isEmpty, !players.contains(where: { $0.itemHash == hash }) { continue }
            let estimate = resolvedClock(of: peer, now: now)?.estimate
            let rtt = estimate?.delayNs ?? 0
            let bound = Int64(estimate?.errorBound(atLocal: now) ?? 0)
            let start = players.filter { hash == nil || $0.itemHash == hash }.map(\.startLatencyNs).max() ?? 0
            terms.append(.init(roundTripNs: rtt, clockBoundNs: bound, startLatencyNs: start))
        }
        let mine = participants[identity.peer]?.players.filter { hash == nil || $0.itemHash == hash }.map(\.startLatencyNs).max() ?? 0
        terms.append(.init(roundTripNs: 0, clockBoundNs: 0, startLatencyNs: mine))
        return LeadTime.lead(terms, configuration: configuration.lead)
    }

    // MARK: - Clocks

    /// The anchor time of `record` on the local clock, with its error bound; nil while no
    /// estimate of the origin's clock exists (directly, through the mesh, or through the peer
    /// that relayed the record). Until then the record cannot be followed: players wait.
    public func localAnchor(of record: ItemRecord, now: Int64) -> (time: Int64, boundNs: Int64)? {
        let origin = record.stamp.origin
        if origin == identity.peer { return (record.timeline.anchorTime, 0) }
        // The bound is the estimate's at the converted instant: it grows away from the samples.
        if let r = resolvedClock(of: origin, now: now) {
            let t = r.estimate.localTime(fromPeer: record.timeline.anchorTime)
            return (t, Int64(r.estimate.errorBound(atLocal: t)))
        }
        if let relay = relayAnchors[record.stamp], let r = resolvedClock(of: relay.via, now: now) {
            let t = r.estimate.localTime(fromPeer: relay.anchorTime)
            return (t, Int64(r.estimate.errorBound(atLocal: t)) + Int64(clamping: relay.boundNs))
        }
        return nil
    }

    /// The record's timeline on the local clock, or nil (see ``localAnchor(of:now:)``).
    ///
    /// A timeline is defined on its origin's clock. A playing one that started in the past is
    /// re-anchored at `now` (converting `now` to the origin's clock, where the estimate is
    /// freshest, rather than an anchor seconds old), and its rate is scaled by the origin's
    /// clock rate relative to ours, so that every peer advances at the origin's pace.
    public func localTimeline(of record: ItemRecord, now: Int64) -> Timeline? {
        let t = record.timeline
        let origin = record.stamp.origin
        if origin == identity.peer { return t }
        guard let anchor = localAnchor(of: record, now: now) else { return nil }
        var local = t
        local.anchorTime = anchor.time
        guard t.phase == .playing, let estimate = resolvedClock(of: origin, now: now)?.estimate else { return local }
        let scaled = t.rate * (1 + estimate.skewPPM * 1e-6)
        if anchor.time >= now {
            return Timeline(phase: .playing, anchorTime: anchor.time, position: t.position, rate: scaled)
        }
        let originNow = estimate.peerTime(fromLocal: now)
        return Timeline(phase: .playing, anchorTime: now, position: t.position(at: originNow), rate: scaled)
    }

    // MARK: - Participants

    /// Replaces this node's own players (the coordinator calls this when a player changes).
    public mutating func setLocalPlayers(_ players: [PlayerStatus], now: Int64) -> [NodeDirective] {
        let mine = participants[identity.peer]!
        guard mine.players != players else { return [] }
        let record = ParticipantRecord(peer: identity.peer, incarnation: identity.incarnation, version: mine.version + 1, players: players)
        participants[identity.peer] = record
        var out: [NodeDirective] = []
        for peer in membership.reachable {
            if let e = membership.endpoint(of: peer) { out.append(.send(.participant(record), to: e)) }
        }
        return out
    }

    // MARK: - Dissemination

    mutating func broadcast(_ record: Replica.Outgoing, now: Int64) -> [NodeDirective] {
        let peers = membership.reachable
        let rtts = roundTrips(now: now)
        replica.issue(record, to: peers, rtt: { rtts[$0] }, now: now)
        return peers.compactMap { peer in
            membership.endpoint(of: peer).map { .send(carrier(for: record, wantsAck: true, relayTo: peer, now: now), to: $0) }
        }
    }

    /// The message carrying `record`; a relayed record (not ours) gets its anchor on our clock.
    func carrier(for record: Replica.Outgoing, wantsAck: Bool, relayTo peer: PeerID, now: Int64) -> PeerMessage {
        switch record {
        case .current(let r):
            return .currentRecord(r, wantsAck: wantsAck)
        case .item(let r):
            var relay: RelayAnchor?
            if r.stamp.origin != identity.peer, r.stamp.origin != peer, let local = localAnchor(of: r, now: now) {
                relay = RelayAnchor(anchorTime: local.time, errorBoundNs: local.boundNs)
            }
            return .itemRecord(r, relay: relay, wantsAck: wantsAck)
        }
    }

    /// A peer became reachable: exchange digests and introduce our players at once.
    mutating func greet(_ peer: PeerID) -> [NodeDirective] {
        guard let e = membership.endpoint(of: peer) else { return [] }
        return [
            .send(.digest(replica.state.digest, participants: participantDigest, wantsReply: true), to: e),
            .send(.participant(participants[identity.peer]!), to: e),
        ]
    }

    var participantDigest: [ParticipantDigest] {
        participants.values.map { ParticipantDigest(peer: $0.peer, incarnation: $0.incarnation, version: $0.version) }
            .sorted { $0.peer < $1.peer }.prefix(PeerMessage.maxParticipantDigests).map { $0 }
    }

    mutating func onGroupMessage(_ message: PeerMessage, from sender: PeerID, source: Endpoint, now: Int64) -> [NodeDirective] {
        var out: [NodeDirective] = []
        switch message {
        case .itemRecord(let r, let relay, let wantsAck):
            if wantsAck { out.append(.send(.ack(stamp: r.stamp), to: source)) }
            if replica.apply(.item(r)) == .applied {
                if let relay, r.stamp.origin != sender { relayAnchors[r.stamp] = (sender, relay.anchorTime, relay.errorBoundNs) }
                pruneRelayAnchors()
                out.append(.groupChanged(GroupChange(kind: .item(r), local: false)))
            }
        case .currentRecord(let r, let wantsAck):
            if wantsAck { out.append(.send(.ack(stamp: r.stamp), to: source)) }
            if replica.apply(.current(r)) == .applied {
                out.append(.groupChanged(GroupChange(kind: .current(r), local: false)))
            }
        case .ack(let stamp):
            replica.acknowledged(stamp, by: sender)
        case .digest(let digest, let theirs, let wantsReply):
            let (current, items) = replica.state.missing(from: digest)
            if let current { out.append(.send(.currentRecord(current, wantsAck: false), to: source)) }
            for r in items { out.append(.send(carrier(for: .item(r), wantsAck: false, relayTo: sender, now: now), to: source)) }
            var known: [PeerID: ParticipantDigest] = [:]
            for d in theirs { known[d.peer] = d }
            var theyHaveNewer = false
            for record in participants.values {
                if let d = known[record.peer], (d.incarnation, d.version) >= (record.incarnation, record.version) {
                    if (d.incarnation, d.version) > (record.incarnation, record.version) { theyHaveNewer = true }
                    continue
                }
                out.append(.send(.participant(record), to: source))
            }
            for d in theirs where participants[d.peer] == nil && d.peer != identity.peer && membership.isReachable(d.peer) {
                theyHaveNewer = true
            }
            if wantsReply || replica.state.lacksSomething(of: digest) || theyHaveNewer {
                out.append(.send(.digest(replica.state.digest, participants: participantDigest, wantsReply: false), to: source))
            }
        case .participant(let record):
            // A peer speaks for itself; others only relay. Never let anyone speak for us.
            guard record.peer != identity.peer else { break }
            guard membership.isReachable(record.peer) || record.peer == sender else { break }
            if participants[record.peer].map({ record.supersedes($0) }) ?? true {
                participants[record.peer] = record
                out.append(.participantsChanged)
            }
        default:
            break
        }
        return out
    }

    mutating func onGroupTick(now: Int64) -> [NodeDirective] {
        var out: [NodeDirective] = []
        let rtts = roundTrips(now: now)
        for (record, peer) in replica.retransmissions(now: now, rtt: { rtts[$0] }) {
            guard membership.isReachable(peer), let e = membership.endpoint(of: peer) else { continue }
            out.append(.send(carrier(for: record, wantsAck: true, relayTo: peer, now: now), to: e))
        }
        if replica.antiEntropyDue(now: now) {
            let digest = PeerMessage.digest(replica.state.digest, participants: participantDigest, wantsReply: false)
            for peer in membership.reachable {
                if let e = membership.endpoint(of: peer) { out.append(.send(digest, to: e)) }
            }
        }
        return out
    }

    /// Best round trip to each measured peer.
    func roundTrips(now: Int64) -> [PeerID: Int64] {
        clocks.compactMapValues { $0.estimator.estimate(atLocal: now)?.delayNs }
    }

    /// Relay anchors are kept only for records still in the state.
    private mutating func pruneRelayAnchors() {
        guard relayAnchors.count > GroupState.maxItems * 2 else { return }
        let live = Set(replica.state.items.values.map(\.stamp))
        relayAnchors = relayAnchors.filter { live.contains($0.key) }
    }
}
