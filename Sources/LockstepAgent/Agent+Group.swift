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
        if let refusal { throw ProtocolError(errorCode(refusal), describe(refusal)) }
        request.reply(stateView(now: now))
    }

    /// The player protocol's code for a refusal: a value out of its range is `invalid_field`, a
    /// request that does not fit the state `invalid_state`.
    func errorCode(_ error: RequestError) -> ProtocolError.Code {
        switch error {
        case .unknownPlayer: .notAPlayer
        case .invalidRate, .positionPastEnd: .invalidField
        case .noItem, .noGroupItem, .unknownSuspension, .notSuspended, .clockUnknown: .invalidState
        }
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
        case .positionPastEnd(let p, let d): "position_ns \(p.ns) is past the end of the item (duration_ns \(d.ns))"
        case .clockUnknown(let p): "the clock of \(name(of: p)), who set the timeline, is not estimated yet"
        }
    }

    // MARK: - Views

    func stateView(now: LocalTime) -> GroupStateView {
        let log = node.group.log
        let state = log.state
        let current = state.current?.item.flatMap { state.items[$0] }
        return GroupStateView(
            item: current.map { itemView($0, now: now) },
            items: state.items.values.sorted { $0.stamp > $1.stamp }.map { itemView($0, now: now) },
            version: log.applied.entries.map { VersionEntry(peerID: $0.replica.peer.hex, name: name(of: $0.replica.peer), incarnation: $0.replica.incarnation, counter: $0.counter) },
            leadNs: node.leadTime(for: state.current?.item, now: now).ns,
            pending: node.group.replica.pendingCount, fingerprint: Self.fingerprint(state),
            log: LogView(unstable: log.unstable.count, waiting: log.waitingCount, members: log.members.count, late: log.late, forcedFolds: log.forcedFolds),
            concurrent: log.reports.map(concurrentView))
    }

    /// The state's fingerprint (``GroupState/fingerprint``), in hex.
    nonisolated static func fingerprint(_ state: GroupState) -> String {
        let hex = String(state.fingerprint, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    func concurrentView(_ report: ConcurrentCommands) -> ConcurrentView {
        ConcurrentView(commands: report.all.map { ConcurrentView.Command(item: $0.item?.value, origin: origin(of: $0.stamp, action: $0.action, reason: nil, by: $0.by)) })
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
        origin(of: r.stamp, action: r.action, reason: r.reason, by: r.by)
    }

    func origin(of c: CurrentRecord) -> Origin {
        origin(of: c.stamp, action: c.item == nil ? .stop : .load, reason: nil, by: c.by)
    }

    func origin(of stamp: Stamp, action: Action, reason: CommandReason?, by: String?) -> Origin {
        Origin(
            peerID: stamp.origin.hex, name: name(of: stamp.origin), action: Origin.Action(action), reason: reason?.text, local: stamp.origin == identity.peerID,
            player: by, lamport: stamp.seq, stampTimeNs: stamp.time)
    }

    func name(of peer: PeerID) -> String {
        peer == identity.peerID ? identity.name : node.membership.peers[peer]?.name ?? peer.short
    }

    // MARK: - Events

    func publish(_ change: GroupChange, now: LocalTime) {
        let state = node.group.state
        // The event's view resolves every peer's clock (the lead) and lists the whole version
        // vector: built only for a client that watches, the log line always.
        let watched = isWatched(.state)
        var event: StateChangedEvent?
        if let op = change.operation, let action = op.command.action {
            let o = origin(of: op.stamp, action: action, reason: op.reason, by: op.by)
            let isCurrent: Bool = switch op.command { case .load, .stop: true; default: false }
            if watched {
                event = StateChangedEvent(hostTimeNs: hostTime(now), change: isCurrent ? .current : .item, itemID: op.item?.value, origin: o, state: stateView(now: now))
            }
            logger.info("group command applied", metadata: [
                "group.item": "\(op.item?.value.truncated(toUTF8: 80) ?? "none")", "group.command": "\(op.command)",
                "group.state": "\(op.item.flatMap { state.items[$0] }.map { "\($0.timeline.phase)" } ?? "-")",
                "group.origin": "\(o.name)", "group.stamp": "\(op.stamp)",
            ])
        } else {
            let c = state.current
            if watched {
                event = StateChangedEvent(
                    hostTimeNs: hostTime(now), change: .current, itemID: c?.item?.value,
                    origin: c.map { origin(of: $0) } ?? Origin(peerID: identity.peerID.hex, name: identity.name, action: .stop, reason: nil, local: true, lamport: 0),
                    state: stateView(now: now))
            }
            logger.info("group state merged from a peer's folded state", metadata: ["group.item": "\(c?.item?.value.truncated(toUTF8: 80) ?? "none")"])
        }
        if let report = change.concurrent {
            event?.concurrent = concurrentView(report)
            logger.notice("concurrent commands, all applied in issue order", metadata: [
                "group.commands": "\(report.all.map { "\($0.action) by \(name(of: $0.stamp.origin))" }.joined(separator: ", "))"
            ])
        }
        if let event { broadcast(event, topic: .state) }
    }

    /// Whether any client is subscribed to `topic`.
    func isWatched(_ topic: Topic) -> Bool {
        clients.values.contains { $0.topics.contains(topic) }
    }

    /// Sends `event` to every client subscribed to `topic`.
    func broadcast(_ event: some Encodable & Sendable, topic: Topic) {
        guard isWatched(topic) else { return }
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
