import LockstepCore
import LockstepPlayerProtocol
import Logging

/// The player side of the socket: player requests become node inputs, and the node's
/// instructions become events, with times moved from the node's clock to the host clock.
extension Agent {
    /// Host time (CLOCK_MONOTONIC) of a node-clock time.
    func hostTime(_ local: Int64) -> Int64 { deviceClock.host(fromDevice: local) }
    /// Node-clock time of a host time.
    func localTime(_ host: Int64) -> Int64 { deviceClock.device(fromHost: host) }
    /// A rate in media ns per node-clock ns, as media ns per host ns (they differ only when a
    /// test simulates a device clock with a skew).
    func hostRate(_ rate: Double) -> Double { rate * (1 + deviceClock.skewPPM * 1e-6) }

    /// The player id of `client`, or the error a non-player gets.
    func playerID(of client: ClientConnection) throws -> UInt32 {
        guard let id = clients[client.id]?.playerID else {
            throw ProtocolError(.notAPlayer, "say hello with role \"player\" first")
        }
        return id
    }

    /// Handles a player request; returns false if `type` is not one.
    func dispatchPlayer(_ type: String, _ line: [UInt8], _ client: ClientConnection, reply: (any Encodable & Sendable) -> Void) throws -> Bool {
        switch type {
        case "load":
            let id = try playerID(of: client)
            let r = try PlayerJSON.decode(LoadRequest.self, from: line)
            guard let item = ItemID(r.item) else { throw ProtocolError(.invalidField, "item must be 1-\(ItemID.maxBytes) bytes") }
            let share = r.share ?? .group
            let (d, result) = node.playerLoad(id: id, item: item, metadata: ItemMetadata(title: r.title, artworkURL: r.artworkURL, durationNs: r.durationNs), solo: share == .solo, now: now())
            let outcome = try result.get()
            // The reply first: events the load caused follow it.
            reply(LoadResult(outcome: LoadOutcomeName(outcome), item: item.value))
            execute(d)
        case "join_group":
            let id = try playerID(of: client)
            let (d, result) = node.playerJoinGroup(id: id, now: now())
            guard case .success(let current) = result else { throw ProtocolError(.invalidState, "the group plays nothing yet") }
            reply(LoadResult(outcome: .adopted, item: current.item?.value ?? ""))
            execute(d)
        case "unload":
            let id = try playerID(of: client)
            reply(EmptyResult())
            execute(node.playerUnload(id: id, now: now()))
        case "ready", "buffering":
            let id = try playerID(of: client)
            reply(EmptyResult())
            execute(node.playerReadiness(id: id, type == "ready" ? .ready : .buffering, now: now()))
        case "intent":
            let id = try playerID(of: client)
            let r = try PlayerJSON.decode(IntentRequest.self, from: line)
            let command: GroupCommand
            switch r.action {
            case .play: command = .play(rate: r.rate)
            case .pause: command = .pause
            case .seek: command = .seek(position: r.positionNs ?? 0)
            case .rate: command = .setRate(r.rate ?? 1)
            }
            let (d, result) = node.playerIntent(id: id, command, now: now())
            if case .failure(let e) = result { throw ProtocolError(.invalidState, e.description) }
            reply(EmptyResult())
            execute(d)
        case "play_immediately":
            let id = try playerID(of: client)
            let r = try PlayerJSON.decode(PlayImmediatelyRequest.self, from: line)
            let (d, result) = node.playerPlayImmediately(id: id, rate: r.rate, now: now())
            if case .failure(let e) = result { throw ProtocolError(.invalidState, e.description) }
            reply(EmptyResult())
            execute(d)
        case "position":
            let id = try playerID(of: client)
            let r = try PlayerJSON.decode(PositionReport.self, from: line)
            reply(EmptyResult())
            execute(node.playerPosition(id: id, position: r.positionNs, at: localTime(r.hostTimeNs), now: now()))
        case "begin_suspension":
            let id = try playerID(of: client)
            let r = try PlayerJSON.decode(BeginSuspensionRequest.self, from: line)
            try beginSuspension(id, reason: r.reason, reply: reply)
        case "end_suspension":
            let id = try playerID(of: client)
            let r = try PlayerJSON.decode(EndSuspensionRequest.self, from: line)
            try endSuspension(id, r, reply: reply)
        case "playback_status":
            reply(try playbackStatus(playerID(of: client)))
        case "group_item":
            reply(stateView())
        case "players":
            reply(playersView())
        case "suspend_player":
            let r = try PlayerJSON.decode(SuspendPlayerRequest.self, from: line)
            try beginSuspension(try adminTarget(r.playerID), reason: r.reason ?? "interruption", reply: reply)
        case "resume_player":
            let r = try PlayerJSON.decode(ResumePlayerRequest.self, from: line)
            let id = try adminTarget(r.playerID)
            guard let sid = r.suspensionID ?? node.players[id]?.suspensions.last(where: { !$0.imposed })?.id else {
                throw ProtocolError(.invalidState, "player \(id) is not suspended")
            }
            try endSuspension(id, EndSuspensionRequest(suspensionID: sid, proposePositionNs: r.proposePositionNs), reply: reply)
        default:
            return false
        }
        rearmAfterEvent()
        return true
    }

    private func beginSuspension(_ id: UInt32, reason: String, reply: (any Encodable & Sendable) -> Void) throws {
        guard !reason.isEmpty else { throw ProtocolError(.invalidField, "reason must not be empty") }
        let (d, result) = node.playerBeginSuspension(id: id, reason: reason, now: now())
        guard case .success(let sid) = result else { throw ProtocolError(.invalidState, "cannot suspend player \(id)") }
        reply(BeginSuspensionResult(suspensionID: sid))
        execute(d)
    }

    private func endSuspension(_ id: UInt32, _ r: EndSuspensionRequest, reply: (any Encodable & Sendable) -> Void) throws {
        let (d, result) = node.playerEndSuspension(id: id, suspension: r.suspensionID, proposedPosition: r.proposePositionNs, now: now())
        if case .failure(let e) = result { throw ProtocolError(.invalidState, e.description) }
        reply(EmptyResult())
        execute(d)
    }

    /// For the CLI's suspend/resume: the given player, or the only one.
    private func adminTarget(_ id: UInt32?) throws -> UInt32 {
        if let id {
            guard node.players[id] != nil else { throw ProtocolError(.invalidField, "no player \(id) on this agent") }
            return id
        }
        guard node.players.count == 1, let only = node.players.keys.first else {
            throw ProtocolError(.invalidField, node.players.isEmpty ? "no player is connected to this agent" : "several players are connected; say which (player_id)")
        }
        return only
    }

    // MARK: - Instructions to events

    func tell(_ id: UInt32, _ instruction: PlayerInstruction) {
        guard let client = clients.values.first(where: { $0.playerID == id })?.connection else { return }
        switch instruction {
        case .timeline(let item, let phase, let position, let rate, let at, let record):
            client.send(TimelineEvent(item: item.value, state: TimelineState(phase), positionNs: position, rate: hostRate(rate), hostTimeNs: hostTime(at), origin: origin(of: record)))
        case .wait(let item, let position, let at, let waitingFor, let record):
            client.send(WaitEvent(item: item.value, positionNs: position, hostTimeNs: hostTime(at), waitingFor: waitingFor.map { WaitingForView(peerName: name(of: $0.peer), player: $0.name, why: $0.why) }, origin: origin(of: record)))
        case .correction(let c):
            switch c {
            case .rate(let rate, let until, let error):
                client.send(CorrectionEvent(kind: .rate, rate: hostRate(rate), untilHostTimeNs: hostTime(until), errorNs: error))
            case .seek(let position, let at, let error):
                client.send(CorrectionEvent(kind: .seek, positionNs: position, hostTimeNs: hostTime(at), errorNs: error))
            }
        case .participants(let item, let list):
            client.send(ParticipantsEvent(item: item.value, participants: list.map(participantView)))
        case .itemProposed(let c):
            let o = Origin(peerID: c.stamp.origin.hex, name: name(of: c.stamp.origin), action: c.item == nil ? .stop : .load, reason: nil, local: c.stamp.origin == identity.peerID, lamport: c.stamp.lamport)
            client.send(ItemProposedEvent(item: c.item?.value, title: c.metadata.title, artworkURL: c.metadata.artworkURL, durationNs: c.metadata.durationNs, origin: o))
        case .groupPlayback(let active, let reason):
            client.send(GroupPlaybackEvent(active: active, reason: reason))
        case .suspension(let began, let sid, let reason, let imposed):
            client.send(SuspensionEvent(change: began ? .began : .ended, suspensionID: sid, reason: reason, by: imposed ? .agent : .player))
        }
        if case .correction(let c) = instruction {
            logger.debug("player correction", metadata: ["player.id": "\(id)", "player.correction": "\(c)"])
        }
    }

    func participantView(_ p: ParticipantInfo) -> ParticipantView {
        ParticipantView(peerID: p.peer.hex, peerName: name(of: p.peer), playerID: p.playerID, name: p.name, readiness: Readiness(p.readiness), suspensionReasons: p.suspensions, local: p.local)
    }

    // MARK: - Views

    func playbackStatus(_ id: UInt32) throws -> PlaybackStatus {
        guard let p = node.players[id] else { throw ProtocolError(.notAPlayer, "no such player") }
        let now = now()
        let record = p.item.flatMap { node.replica.state.items[$0] }
        let inGroup = p.item != nil && !p.solo && !p.suspendedByPlayer && record != nil
        return PlaybackStatus(
            item: p.item?.value, share: p.solo ? .solo : .group, readiness: Readiness(p.readiness), inGroupPlayback: inGroup,
            suspensionReasons: p.suspensions.map(\.reason), timeline: inGroup ? record.map { itemView($0, now: now) } : nil,
            participants: p.item.map { node.participants(on: $0).map(participantView) } ?? [])
    }

    func playersView() -> PlayersResult {
        var names: [UInt64: String] = [:]
        for r in node.replica.state.items.values { names[r.item.stableHash] = r.item.value }
        for p in node.players.values { if let i = p.item { names[i.stableHash] = i.value } }
        var list: [ParticipantWithItem] = []
        for (peer, record) in node.participants where peer == identity.peerID || node.membership.isReachable(peer) {
            for s in record.players {
                let view = ParticipantView(peerID: peer.hex, peerName: name(of: peer), playerID: s.playerID, name: s.name, readiness: Readiness(s.readiness), suspensionReasons: s.suspensions, local: peer == identity.peerID)
                let item = s.itemHash.map { names[$0] ?? String($0, radix: 16) }
                let syncError = peer == identity.peerID ? node.players[s.playerID]?.sync.lastErrorNs : nil
                list.append(ParticipantWithItem(participant: view, item: item, solo: s.solo, outputLatencyNs: s.outputLatencyNs, startLatencyNs: s.startLatencyNs, syncErrorNs: syncError))
            }
        }
        return PlayersResult(players: list.sorted { ($0.participant.peerName, $0.participant.playerID) < ($1.participant.peerName, $1.participant.playerID) })
    }
}

extension LoadOutcomeName {
    init(_ outcome: LoadOutcome) {
        switch outcome {
        case .adopted: self = .adopted
        case .proposed: self = .proposed
        case .solo: self = .solo
        }
    }
}
