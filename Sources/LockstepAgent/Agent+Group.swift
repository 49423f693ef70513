import LockstepCore
import LockstepPeerWire
import LockstepPlayerProtocol
import Logging

extension Agent {
    // MARK: - Requests

    /// `command`: a transport command for the group, from the CLI or a tool; replies with the state.
    func command(_ r: CommandRequest, _ request: Request, now: LocalTime) throws {
        let item = try r.item.map { text -> ItemID in
            guard let id = ItemID(text) else { throw ProtocolError(.invalidField, "item must be 1-\(ItemID.maxBytes) bytes") }
            return id
        }
        let command: GroupCommand
        switch r.action {
        case .load:
            // (validate() made sure a load names its item.)
            guard let item else { throw ProtocolError(.invalidField, "load needs item") }
            command = .load(item, ItemMetadata(title: r.title, artworkURL: r.artworkURL, duration: r.durationNs.map { .nanoseconds($0) }))
        default:
            command = GroupCommand(r.action, positionNs: r.positionNs, rate: r.rate)
        }
        var refusal: RequestError?
        execute(node.onCommand(command, item: command.action == .load ? nil : item, now: now), now: now) { outcome in
            if case .refused(let e) = outcome { refusal = e }
        }
        if let refusal { throw ProtocolError(.invalidState, describe(refusal)) }
        request.reply(stateView(now: now))
    }

    /// A refusal, in words for people.
    func describe(_ error: RequestError) -> String {
        switch error {
        case .unknownPlayer: "no such player (say hello as a player first)"
        case .noItem: "no item to act on; load one first"
        case .noGroupItem: "the group plays nothing yet"
        case .unknownSuspension(let id): "no suspension \(id) is active"
        case .notSuspended: "the player is not suspended"
        case .invalidRate(let r): "rate \(r) is outside \(Limits.rate.lowerBound)...\(Limits.rate.upperBound)"
        case .clockUnknown(let p): "the clock of \(name(of: p)), who set the timeline, is not estimated yet"
        }
    }

    // MARK: - Views

    func stateView(now: LocalTime) -> GroupStateView {
        let state = node.group.state
        let current = state.current?.item.flatMap { state.items[$0] }
        return GroupStateView(
            item: current.map { itemView($0, now: now) },
            items: state.items.values.sorted { $0.stamp > $1.stamp }.map { itemView($0, now: now) },
            version: state.version.entries.map { VersionEntry(peerID: $0.peer.hex, name: name(of: $0.peer), counter: $0.counter) },
            leadNs: node.leadTime(for: state.current?.item, now: now).ns,
            pending: node.group.replica.pendingCount, fingerprint: Self.fingerprint(state))
    }

    /// FNV-1a over the wire encoding of every record, in stamp order.
    nonisolated static func fingerprint(_ state: GroupState) -> String {
        var bytes: [UInt8] = []
        if let c = state.current { bytes += PeerMessage.currentRecord(c, wantsAck: false).encoded() }
        for r in state.records { bytes += PeerMessage.itemRecord(r, relay: nil, wantsAck: false).encoded() }
        return FNV1a.hex(bytes)
    }

    func itemView(_ r: ItemRecord, now: LocalTime) -> ItemView {
        let timelines = node.timelines
        let anchor = timelines.anchor(of: r, now: now)
        let local = timelines.timeline(of: r, now: now)
        return ItemView(
            id: r.item.value, title: r.metadata.title, artworkURL: r.metadata.artworkURL, durationNs: r.metadata.duration?.ns,
            state: TimelineState(r.timeline.phase), hostTimeNs: anchor.map { hostTime($0.time) },
            positionNs: r.timeline.position.ns, rate: r.timeline.rate, positionNowNs: local.map { $0.position(at: now).ns },
            originTimeNs: r.timeline.anchorTime.ns, anchorBoundNs: anchor?.bound.ns, origin: origin(of: r))
    }

    func origin(of r: ItemRecord) -> Origin {
        Origin(peerID: r.stamp.origin.hex, name: name(of: r.stamp.origin), action: Origin.Action(r.action), reason: r.reason?.text, local: r.stamp.origin == identity.peerID, lamport: r.stamp.lamport)
    }

    func origin(of c: CurrentRecord) -> Origin {
        Origin(peerID: c.stamp.origin.hex, name: name(of: c.stamp.origin), action: c.item == nil ? .stop : .load, reason: nil, local: c.stamp.origin == identity.peerID, lamport: c.stamp.lamport)
    }

    func name(of peer: PeerID) -> String {
        peer == identity.peerID ? identity.name : node.membership.peers[peer]?.name ?? peer.short
    }

    // MARK: - Events

    func publish(_ change: GroupChange, now: LocalTime) {
        let event: StateChangedEvent
        switch change.kind {
        case .item(let r):
            event = StateChangedEvent(hostTimeNs: hostTime(now), change: .item, itemID: r.item.value, origin: origin(of: r), state: stateView(now: now))
            logger.info("group timeline changed", metadata: [
                "group.item": "\(r.item.value.truncated(toUTF8: 80))", "group.action": "\(r.action)", "group.state": "\(r.timeline.phase)",
                "group.origin": "\(name(of: r.stamp.origin))", "group.stamp": "\(r.stamp)",
            ])
        case .current(let c):
            let o = origin(of: c)
            event = StateChangedEvent(hostTimeNs: hostTime(now), change: .current, itemID: c.item?.value, origin: o, state: stateView(now: now))
            logger.info("group item changed", metadata: ["group.item": "\(c.item?.value.truncated(toUTF8: 80) ?? "none")", "group.origin": "\(o.name)"])
        }
        broadcast(event, topic: .state)
    }

    /// Sends `event` to every client subscribed to `topic`.
    func broadcast(_ event: some Encodable & Sendable, topic: Topic) {
        guard clients.values.contains(where: { $0.topics.contains(topic) }) else { return }
        guard let line = try? PlayerJSON.encode(event) else { return }
        for c in clients.values where c.topics.contains(topic) { c.connection.send(line) }
    }
}

extension GroupCommand {
    /// The command a request's action names (a request that decoded has the fields its action
    /// needs: ``CommandRequest/validate()``, ``IntentRequest/validate()``). Not for `load`.
    init(_ action: CommandRequest.Action, positionNs: Int64?, rate: Double?) {
        switch action {
        case .play: self = .play(rate: rate)
        case .pause: self = .pause
        case .seek: self = .seek(position: MediaPosition(clamping: positionNs ?? 0))
        case .rate: self = .setRate(rate ?? 1)
        case .stop, .load: self = .stop
        }
    }

    init(_ action: IntentAction, positionNs: Int64?, rate: Double?) {
        let same: CommandRequest.Action
        switch action {
        case .play: same = .play
        case .pause: same = .pause
        case .seek: same = .seek
        case .rate: same = .rate
        }
        self.init(same, positionNs: positionNs, rate: rate)
    }
}

extension TimelineState {
    init(_ phase: TimelinePhase) {
        switch phase {
        case .stopped: self = .stopped
        case .paused: self = .paused
        case .waiting: self = .waiting
        case .playing: self = .playing
        }
    }
}

extension Origin.Action {
    init(_ action: Action) {
        switch action {
        case .load: self = .load
        case .play: self = .play
        case .pause: self = .pause
        case .seek: self = .seek
        case .setRate: self = .rate
        case .stop: self = .stop
        case .start: self = .start
        }
    }
}

extension Readiness {
    init(_ readiness: PlayerStatus.Readiness) {
        switch readiness {
        case .loading: self = .loading
        case .ready: self = .ready
        case .buffering: self = .buffering
        }
    }
}
