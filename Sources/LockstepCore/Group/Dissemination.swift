/// The replication protocol of one node: the group state (``Replica``) and the participant
/// records of every peer, spread to and merged from the other peers (`Protocol/peer-protocol.md`
/// §4.5–4.10, §5).
///
/// A pure instance: every input is an `on…` call with the current local time, every output a
/// ``Directive``. Which peers are reachable, their round trips and how to put a timeline on the
/// local clock (for the relay anchors it adds to records it forwards) are told by the owner
/// (``Node``) with each input that needs them.
///
/// Participant records are owned by their peer: a newer one (higher incarnation, then version)
/// replaces an older one; anyone may relay them, nobody may speak for this node.
public struct Dissemination: Sendable {
    /// What to do.
    public enum Directive: Sendable, Equatable {
        /// Send to a peer (by id: the owner knows its path).
        case send(PeerMessage, to: PeerID)
        /// Send back where a datagram came from (an ack, an answer to a digest).
        case reply(PeerMessage, to: Endpoint)
        /// A record was applied (from this node or another).
        case changed(GroupChange)
        /// A peer's players changed.
        case participantsChanged
        /// A record from a peer was refused (counted by the shell).
        case refused(Refusal)
    }

    /// Why a record from a peer was refused.
    public enum Refusal: String, Sendable, Equatable {
        /// Its Lamport counter was far ahead of everything seen (review finding H2).
        case lamportTooFarAhead = "lamport_too_far_ahead"
        /// A participant record about this node, newer than its own: another peer speaking for it.
        case speaksForUs = "speaks_for_us"
    }

    public let me: PeerID
    public let incarnation: UInt64
    public private(set) var replica: Replica
    /// Every peer's players, as they last said (this node's own included).
    public private(set) var participants: [PeerID: ParticipantRecord] = [:]
    /// For records relayed by a peer other than their origin: the anchor on the relay's clock.
    public private(set) var relays: [Stamp: RelayedAnchor] = [:]

    public init(me: PeerID, incarnation: UInt64, configuration: Replica.Configuration = .init()) {
        self.me = me
        self.incarnation = incarnation
        self.replica = Replica(me: me, incarnation: incarnation, configuration: configuration)
        self.participants[me] = ParticipantRecord(peer: me, incarnation: incarnation, version: 0, players: [])
    }

    /// The replicated group state.
    public var state: GroupState { replica.state }

    // MARK: - Local inputs

    /// This node's command: stamped, applied, and sent to every peer in `peers`, who acknowledge it.
    public mutating func onProposal(
        _ proposal: Proposal, now: LocalTime, peers: [PeerID], rtt: (PeerID) -> TimeSpan?, timelines: LocalTimelines
    ) -> [Directive] {
        let (stamp, version) = replica.nextStamp()
        let record: Replica.Outgoing
        let change: GroupChange.Kind
        switch proposal {
        case .current(let item, let metadata):
            let r = CurrentRecord(item: item, metadata: metadata, stamp: stamp, version: version)
            record = .current(r)
            change = .current(r)
        case .item(let item, let metadata, let timeline, let action, let reason):
            let t = timeline.moved(to: PeerTime(ours: timeline.anchorTime))
            let r = ItemRecord(item: item, metadata: metadata, timeline: t, action: action, reason: reason, stamp: stamp, version: version)
            record = .item(r)
            change = .item(r)
        }
        replica.issue(record, to: peers, rtt: rtt, now: now)
        var out: [Directive] = peers.map { .send(carrier(for: record, wantsAck: true, relayTo: $0, now: now, timelines: timelines), to: $0) }
        out.append(.changed(GroupChange(kind: change, local: true)))
        return out
    }

    /// This node's players changed: its participant record goes to every peer in `peers`.
    public mutating func onLocalPlayers(_ players: [PlayerStatus], peers: [PeerID]) -> [Directive] {
        let mine = participants[me] ?? ParticipantRecord(peer: me, incarnation: incarnation, version: 0, players: [])
        guard mine.players != players else { return [] }
        let record = ParticipantRecord(peer: me, incarnation: incarnation, version: mine.version + 1, players: players)
        participants[me] = record
        return peers.map { .send(.participant(record), to: $0) } + [.participantsChanged]
    }

    // MARK: - Peers

    /// A peer became reachable: exchange digests and introduce our players at once.
    public func onPeerReachable(_ peer: PeerID) -> [Directive] {
        var out: [Directive] = [.send(.digest(replica.state.digest, participants: participantDigest, wantsReply: true), to: peer)]
        if let mine = participants[me] { out.append(.send(.participant(mine), to: peer)) }
        return out
    }

    /// A peer is lost: no more retransmissions to it (anti-entropy catches it up when it is
    /// back), and its players no longer count.
    public mutating func onPeerLost(_ peer: PeerID) {
        replica.forget(peer)
        participants[peer] = nil
    }

    /// A peer restarted or was forgotten: its players are gone with its old life.
    public mutating func onPeerGone(_ peer: PeerID) {
        participants[peer] = nil
    }

    // MARK: - Messages

    /// An item record from `sender` (via `source`).
    public mutating func onItemRecord(
        _ record: ItemRecord, relay: RelayAnchor?, wantsAck: Bool, from sender: PeerID, source: Endpoint
    ) -> [Directive] {
        switch replica.apply(.item(record)) {
        case .lamportTooFarAhead:
            return [.refused(.lamportTooFarAhead)]
        case .applied:
            if let relay, record.stamp.origin != sender {
                relays[record.stamp] = RelayedAnchor(via: sender, anchorTime: relay.anchorTime, bound: relay.errorBound)
            }
            pruneRelays()
            return (wantsAck ? [.reply(.ack(stamp: record.stamp), to: source)] : []) + [.changed(GroupChange(kind: .item(record), local: false))]
        case .duplicate, .superseded:
            return wantsAck ? [.reply(.ack(stamp: record.stamp), to: source)] : []
        }
    }

    /// The group's current item, from `sender` (via `source`).
    public mutating func onCurrentRecord(_ record: CurrentRecord, wantsAck: Bool, source: Endpoint) -> [Directive] {
        switch replica.apply(.current(record)) {
        case .lamportTooFarAhead:
            return [.refused(.lamportTooFarAhead)]
        case .applied:
            return (wantsAck ? [.reply(.ack(stamp: record.stamp), to: source)] : []) + [.changed(GroupChange(kind: .current(record), local: false))]
        case .duplicate, .superseded:
            return wantsAck ? [.reply(.ack(stamp: record.stamp), to: source)] : []
        }
    }

    /// `peer` has the record stamped `stamp`.
    public mutating func onAck(_ stamp: Stamp, from peer: PeerID) {
        replica.acknowledged(stamp, by: peer)
    }

    /// Anti-entropy: `sender` holds what `digest` says. It gets what it lacks; it is asked for
    /// what we lack (our digest back); `reachable` says whose participant records it may lack.
    public func onDigest(
        _ digest: GroupDigest, participants theirs: [ParticipantDigest], wantsReply: Bool, from sender: PeerID, source: Endpoint,
        reachable: (PeerID) -> Bool, now: LocalTime, timelines: LocalTimelines
    ) -> [Directive] {
        var out: [Directive] = []
        let (current, items) = replica.state.missing(from: digest)
        if let current { out.append(.reply(.currentRecord(current, wantsAck: false), to: source)) }
        for r in items { out.append(.reply(carrier(for: .item(r), wantsAck: false, relayTo: sender, now: now, timelines: timelines), to: source)) }
        var known: [PeerID: ParticipantDigest] = [:]
        for d in theirs { known[d.peer] = d }
        var theyHaveNewer = false
        for record in participants.values.sorted(by: { $0.peer < $1.peer }) {
            if let d = known[record.peer], (d.incarnation, d.version) >= (record.incarnation, record.version) {
                if (d.incarnation, d.version) > (record.incarnation, record.version) { theyHaveNewer = true }
                continue
            }
            out.append(.reply(.participant(record), to: source))
        }
        for d in theirs where participants[d.peer] == nil && d.peer != me && reachable(d.peer) {
            theyHaveNewer = true
        }
        if wantsReply || replica.state.lacksSomething(of: digest) || theyHaveNewer {
            out.append(.reply(.digest(replica.state.digest, participants: participantDigest, wantsReply: false), to: source))
        }
        return out
    }

    /// A peer's players, from `sender` (the peer itself, or a relay). A peer speaks for itself;
    /// others only relay records of reachable peers. Nobody speaks for this node.
    public mutating func onParticipant(_ record: ParticipantRecord, from sender: PeerID, reachable: (PeerID) -> Bool) -> [Directive] {
        if record.peer == me {
            // Our own record relayed back is harmless; one newer than ours is someone speaking for us.
            return participants[me].map { record.supersedes($0) } ?? true ? [.refused(.speaksForUs)] : []
        }
        guard reachable(record.peer) || record.peer == sender else { return [] }
        guard participants[record.peer].map({ record.supersedes($0) }) ?? true else { return [] }
        participants[record.peer] = record
        return [.participantsChanged]
    }

    // MARK: - Time

    /// Retransmissions due, and the anti-entropy round when it is due.
    public mutating func onTick(now: LocalTime, peers: [PeerID], rtt: (PeerID) -> TimeSpan?, timelines: LocalTimelines) -> [Directive] {
        var out: [Directive] = []
        let reachable = Set(peers)
        for (record, peer) in replica.retransmissions(now: now, rtt: rtt) where reachable.contains(peer) {
            out.append(.send(carrier(for: record, wantsAck: true, relayTo: peer, now: now, timelines: timelines), to: peer))
        }
        if replica.antiEntropyDue(now: now) {
            let digest = PeerMessage.digest(replica.state.digest, participants: participantDigest, wantsReply: false)
            out += peers.map { .send(digest, to: $0) }
        }
        return out
    }

    /// The local clock stepped: every retransmission and the anti-entropy round are due now.
    public mutating func onLocalClockStep(now: LocalTime) {
        replica.rebase(now: now)
    }

    /// When ``onTick(now:peers:rtt:timelines:)`` next has work.
    public func nextDeadline(now: LocalTime) -> LocalTime {
        replica.nextDeadline(now: now)
    }

    // MARK: - Helpers

    /// The message carrying `record`; a relayed record (not ours) gets its anchor on our clock.
    func carrier(for record: Replica.Outgoing, wantsAck: Bool, relayTo peer: PeerID, now: LocalTime, timelines: LocalTimelines) -> PeerMessage {
        switch record {
        case .current(let r):
            return .currentRecord(r, wantsAck: wantsAck)
        case .item(let r):
            var relay: RelayAnchor?
            if r.stamp.origin != me, r.stamp.origin != peer, let local = timelines.anchor(of: r, now: now) {
                relay = RelayAnchor(anchorTime: PeerTime(ours: local.time), errorBound: local.bound.clamped(to: Limits.relayBoundNs))
            }
            return .itemRecord(r, relay: relay, wantsAck: wantsAck)
        }
    }

    var participantDigest: [ParticipantDigest] {
        participants.values.map { ParticipantDigest(peer: $0.peer, incarnation: $0.incarnation, version: $0.version) }
            .sorted { $0.peer < $1.peer }.prefix(PeerMessage.maxParticipantDigests).map { $0 }
    }

    /// Relay anchors are kept only for records still in the state.
    private mutating func pruneRelays() {
        guard relays.count > GroupState.maxItems * 2 else { return }
        let live = Set(replica.state.items.values.map(\.stamp))
        relays = relays.filter { live.contains($0.key) }
    }
}
