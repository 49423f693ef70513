import LockstepCore
import LockstepPeerWire
import LockstepPlayerProtocol
import Logging

extension Agent {
    // MARK: - Requests

    func command(_ request: CommandRequest) throws -> GroupStateView {
        let now = now()
        let item = try request.item.map { text -> ItemID in
            guard let id = ItemID(text) else { throw ProtocolError(.invalidField, "item must be 1-\(ItemID.maxBytes) bytes") }
            return id
        }
        let command: GroupCommand
        switch request.action {
        case .play:
            command = .play(rate: request.rate)
        case .pause:
            command = .pause
        case .seek:
            command = .seek(position: request.positionNs ?? 0)
        case .rate:
            command = .setRate(request.rate ?? 1)
        case .stop:
            command = .stop
        case .load:
            guard let item else { throw ProtocolError(.invalidField, "load needs item") }
            command = .load(item, ItemMetadata(title: request.title, artworkURL: request.artworkURL, durationNs: request.durationNs))
        }
        let (directives, result) = node.issue(command, item: command.action == .load ? nil : item, reason: nil, now: now)
        if case .failure(let error) = result { throw ProtocolError(.invalidState, error.description) }
        execute(directives)
        rearmAfterEvent()
        return stateView()
    }

    // MARK: - Views

    func stateView() -> GroupStateView {
        let now = now()
        let state = node.replica.state
        let current = state.current?.item.flatMap { state.items[$0] }
        return GroupStateView(
            item: current.map { itemView($0, now: now) },
            items: state.items.values.sorted { $0.stamp > $1.stamp }.map { itemView($0, now: now) },
            version: state.version.entries.map { VersionEntry(peerID: $0.peer.hex, name: name(of: $0.peer), counter: $0.counter) },
            leadNs: node.leadTime(for: state.current?.item, now: now),
            pending: node.replica.pendingCount, fingerprint: Self.fingerprint(state))
    }

    /// FNV-1a over the wire encoding of every record, in stamp order.
    nonisolated static func fingerprint(_ state: GroupState) -> String {
        var bytes: [UInt8] = []
        if let c = state.current { bytes += PeerMessage.currentRecord(c, wantsAck: false).encoded() }
        for r in state.records { bytes += PeerMessage.itemRecord(r, relay: nil, wantsAck: false).encoded() }
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes {
            h ^= UInt64(b)
            h = h &* 0x0000_0100_0000_01b3
        }
        let hex = String(h, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    func itemView(_ r: ItemRecord, now: Int64) -> ItemView {
        let anchor = node.localAnchor(of: r, now: now)
        let local = node.localTimeline(of: r, now: now)
        return ItemView(
            id: r.item.value, title: r.metadata.title, artworkURL: r.metadata.artworkURL, durationNs: r.metadata.durationNs,
            state: TimelineState(r.timeline.phase), hostTimeNs: anchor.map { deviceClock.host(fromDevice: $0.time) },
            positionNs: r.timeline.position, rate: r.timeline.rate, positionNowNs: local.map { $0.position(at: now) },
            originTimeNs: r.timeline.anchorTime, anchorBoundNs: anchor?.boundNs, origin: origin(of: r))
    }

    func origin(of r: ItemRecord) -> Origin {
        Origin(peerID: r.stamp.origin.hex, name: name(of: r.stamp.origin), action: Origin.Action(r.action), reason: r.reason, local: r.stamp.origin == identity.peerID, lamport: r.stamp.lamport)
    }

    func name(of peer: PeerID) -> String {
        peer == identity.peerID ? identity.name : node.membership.peers[peer]?.name ?? peer.short
    }

    // MARK: - Events

    func publish(_ change: GroupChange) {
        let host = MonotonicClock.read()
        let event: StateChangedEvent
        switch change.kind {
        case .item(let r):
            event = StateChangedEvent(hostTimeNs: host, change: .item, itemID: r.item.value, origin: origin(of: r), state: stateView())
            logger.info("group timeline changed", metadata: [
                "group.item": "\(r.item.value.truncated(toUTF8: 80))", "group.action": "\(r.action)", "group.state": "\(r.timeline.phase)",
                "group.origin": "\(name(of: r.stamp.origin))", "group.stamp": "\(r.stamp)",
            ])
        case .current(let c):
            let o = Origin(peerID: c.stamp.origin.hex, name: name(of: c.stamp.origin), action: c.item == nil ? .stop : .load, reason: nil, local: change.local, lamport: c.stamp.lamport)
            event = StateChangedEvent(hostTimeNs: host, change: .current, itemID: c.item?.value, origin: o, state: stateView())
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

extension TimelineState {
    init(_ phase: Timeline.Phase) {
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
