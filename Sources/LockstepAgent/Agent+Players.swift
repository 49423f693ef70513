import LockstepCore
import LockstepPlayerProtocol
import Logging

/// The player side of the socket: player requests become node inputs, and the node's
/// instructions become events, with times moved from the node's clock to the host clock.
extension Agent {
    /// The player id of `client`, or the error a non-player gets.
    func playerID(of client: ClientConnection) throws -> UInt32 {
        guard let id = clients[client.id]?.playerID else {
            throw ProtocolError(.notAPlayer, "say hello with role \"player\" first")
        }
        return id
    }

    /// The player id of `client` if it has an item loaded: readiness, position reports and
    /// suspensions are about an item, so before `load` they are `invalid_state`.
    func playerWithItem(_ client: ClientConnection) throws -> UInt32 {
        let id = try playerID(of: client)
        guard node.coordinator.players[id]?.item != nil else {
            throw ProtocolError(.invalidState, "no item loaded; load one first")
        }
        return id
    }

    /// Handles a player request; returns false if `type` is not one.
    func dispatchPlayer(_ type: String, _ request: Request, now: LocalTime) throws -> Bool {
        let client = request.client
        switch type {
        case "load":
            let id = try playerID(of: client)
            let r = try request.decode(LoadRequest.self)
            guard let item = ItemID(r.item) else { throw ProtocolError(.invalidField, "item must be 1-\(ItemID.maxBytes) bytes") }
            let metadata = ItemMetadata(title: r.title, artworkURL: r.artworkURL, duration: r.durationNs.map { .nanoseconds($0) })
            run(node.onPlayerLoad(id: id, item: item, metadata: metadata, solo: r.share == .solo, now: now), request, now: now)
        case "join_group":
            let id = try playerID(of: client)
            run(node.onPlayerJoinGroup(id: id, now: now), request, now: now)
        case "unload":
            let id = try playerID(of: client)
            run(node.onPlayerUnload(id: id, now: now), request, now: now)
        case "ready", "buffering":
            let id = try playerWithItem(client)
            run(node.onPlayerReadiness(id: id, type == "ready" ? .ready : .buffering, now: now), request, now: now)
        case "start_latency":
            let id = try playerID(of: client)
            let r = try request.decode(StartLatencyRequest.self)
            run(node.onPlayerStartLatency(id: id, .nanoseconds(r.startLatencyNs), now: now), request, now: now)
        case "intent":
            let id = try playerID(of: client)
            let r = try request.decode(IntentRequest.self)
            run(node.onPlayerIntent(id: id, GroupCommand(r.action, positionNs: r.positionNs, rate: r.rate), now: now), request, now: now)
        case "play_immediately":
            let id = try playerID(of: client)
            let r = try request.decode(PlayImmediatelyRequest.self)
            run(node.onPlayerPlayImmediately(id: id, rate: r.rate, now: now), request, now: now)
        case "position":
            _ = try playerID(of: client)
            let r = try request.decode(PositionReport.self)
            // A report from far away in time (a player with the wrong clock) says nothing of now.
            let age = hostClock.now().subtractingSaturating(r.hostTimeNs)
            guard age.magnitude <= PlayerLimits.reportAgeNs else {
                throw ProtocolError(.invalidField, "host_time_ns must be within \(PlayerLimits.reportAgeNs / 1_000_000_000) s of the agent's host time (CLOCK_MONOTONIC), not \(age / 1_000_000) ms away")
            }
            // Fields first, then the state: a bad report is named as such even before load.
            let id = try playerWithItem(client)
            request.reply(EmptyResult())
            let position = MediaPosition(clamping: r.positionNs)
            execute(node.onPlayerPosition(id: id, position: position, at: localTime(r.hostTimeNs), now: now), now: now)
        case "begin_suspension":
            let id = try playerWithItem(client)
            let r = try request.decode(BeginSuspensionRequest.self)
            run(node.onPlayerBeginSuspension(id: id, reason: SuspensionReason(text: r.reason), now: now), request, now: now)
        case "end_suspension":
            let id = try playerID(of: client)
            let r = try request.decode(EndSuspensionRequest.self)
            let position = r.proposePositionNs.map { MediaPosition(clamping: $0) }
            run(node.onPlayerEndSuspension(id: id, suspension: r.suspensionID, proposedPosition: position, now: now), request, now: now)
        case "playback_status":
            request.reply(try playbackStatus(playerID(of: client), now: now))
        case "group_item":
            request.reply(stateView(now: now))
        case "players":
            request.reply(playersView(now: now))
        case "latency_list":
            request.reply(savedLatencies().list)
        case "latency_set":
            let r = try request.decode(LatencySetRequest.self)
            var latencies = savedLatencies()
            guard latencies.set(r.name, r.outputLatencyNs) else {
                throw ProtocolError(.invalidState, "at most \(SavedLatencies.maxEntries) latencies are kept; forget one first")
            }
            do {
                try StateDirectory(path: configuration.stateDirectory).saveLatencies(latencies)
            } catch {
                throw ProtocolError(.internal, "\(error)")
            }
            logger.info("output latency kept", metadata: ["player.name": "\(r.name)", "player.output_latency_ns": "\(r.outputLatencyNs.map(String.init) ?? "forgotten")"])
            request.reply(latencies.list)
        case "suspend_player":
            let r = try request.decode(SuspendPlayerRequest.self)
            let id = try adminTarget(r.playerID)
            run(node.onPlayerBeginSuspension(id: id, reason: SuspensionReason(text: r.reason ?? "interruption"), now: now), request, now: now)
        case "resume_player":
            let r = try request.decode(ResumePlayerRequest.self)
            let id = try adminTarget(r.playerID)
            let position = r.proposePositionNs.map { MediaPosition(clamping: $0) }
            run(node.onPlayerEndSuspension(id: id, suspension: r.suspensionID, proposedPosition: position, now: now), request, now: now)
        default:
            return false
        }
        return true
    }

    /// Carries out a player request's directives: its reply first, then what it caused.
    private func run(_ directives: [NodeDirective], _ request: Request, now: LocalTime) {
        execute(directives, now: now) { outcome in
            switch outcome {
            case .done: request.reply(EmptyResult())
            case .loaded(let outcome, let item): request.reply(LoadResult(outcome: LoadOutcomeName(outcome), item: item.value))
            case .suspensionBegan(let sid): request.reply(BeginSuspensionResult(suspensionID: sid))
            case .refused(let error): request.reply(error: ProtocolError(self.errorCode(error), self.describe(error)))
            }
        }
    }

    /// The output latencies kept in the state directory (a file that cannot be used is one
    /// warning line, and no latencies).
    func savedLatencies() -> SavedLatencies {
        let (latencies, warning) = StateDirectory(path: configuration.stateDirectory).savedLatencies()
        if let warning { logger.warning("\(warning)") }
        return latencies
    }

    /// The output latency kept for a player of this name (as the agent keeps names: 32 bytes).
    func savedOutputLatency(name: String) -> Int64? {
        savedLatencies().byName[name.truncated(toUTF8: PlayerLimits.playerNameBytes.upperBound)]
    }

    /// For the CLI's suspend/resume: the given player, or the only one.
    private func adminTarget(_ id: UInt32?) throws -> UInt32 {
        let players = node.coordinator.players
        if let id {
            guard players[id] != nil else { throw ProtocolError(.invalidField, "no player \(id) on this agent") }
            return id
        }
        guard players.count == 1, let only = players.keys.first else {
            throw ProtocolError(.invalidField, players.isEmpty ? "no player is connected to this agent" : "several players are connected; say which (player_id)")
        }
        return only
    }

    // MARK: - Instructions to events

    func tell(_ id: UInt32, _ instruction: PlayerInstruction, now: LocalTime) {
        guard let client = clients.values.first(where: { $0.playerID == id })?.connection else { return }
        switch instruction {
        case .timeline(let item, let phase, let position, let rate, let at, let record):
            client.send(TimelineEvent(item: item.value, state: TimelineState(phase), positionNs: position.ns, rate: hostRate(rate), hostTimeNs: hostTime(at), origin: origin(of: record)))
        case .wait(let item, let position, let at, let waitingFor, let record):
            let list = waitingFor.map { WaitingForView(peerName: name(of: $0.peer), player: $0.name, why: $0.why.description) }
            client.send(WaitEvent(item: item.value, positionNs: position.ns, hostTimeNs: hostTime(at), waitingFor: list, origin: origin(of: record)))
        case .correction(let c):
            switch c {
            case .rate(let rate, let until, let error):
                client.send(CorrectionEvent(kind: .rate, rate: hostRate(rate), untilHostTimeNs: hostTime(until), errorNs: error.ns))
            case .seek(let position, let at, let error):
                client.send(CorrectionEvent(kind: .seek, positionNs: position.ns, hostTimeNs: hostTime(at), errorNs: error.ns))
            }
            logger.debug("player correction", metadata: ["player.id": "\(id)", "player.correction": "\(c)"])
        case .participants(let item, let list):
            client.send(ParticipantsEvent(item: item.value, participants: list.map(participantView)))
        case .itemProposed(let c):
            client.send(ItemProposedEvent(item: c.item?.value, title: c.metadata.title, artworkURL: c.metadata.artworkURL, durationNs: c.metadata.duration?.ns, origin: origin(of: c)))
        case .groupPlayback(let active, let reason):
            client.send(GroupPlaybackEvent(active: active, reason: describe(reason)))
        case .suspension(let began, let sid, let reason, let imposed):
            client.send(SuspensionEvent(change: began ? .began : .ended, suspensionID: sid, reason: reason.text, by: imposed ? .agent : .player))
        case .concurrent(let report):
            client.send(ConcurrentCommandsEvent(hostTimeNs: hostTime(now), commands: concurrentView(report).commands))
        }
    }

    /// Why a player is in group playback or not, in words for people.
    func describe(_ reason: GroupPlaybackReason) -> String {
        switch reason {
        case .following(let item): "following \(item.value.truncated(toUTF8: 64))"
        case .solo: "solo"
        case .noItem: "no item"
        case .suspended(let reasons): "suspended: \(reasons.map(\.text).joined(separator: ", "))"
        case .noTimelineYet: "no timeline yet"
        }
    }

    func participantView(_ p: ParticipantInfo) -> ParticipantView {
        ParticipantView(
            peerID: p.peer.hex, peerName: name(of: p.peer), playerID: p.playerID, name: p.name, readiness: Readiness(p.readiness),
            suspensionReasons: p.suspensions.map(\.text), local: p.local)
    }

    // MARK: - Views

    func playbackStatus(_ id: UInt32, now: LocalTime) throws -> PlaybackStatus {
        guard let p = node.coordinator.players[id] else { throw ProtocolError(.notAPlayer, "no such player") }
        let record = p.item.flatMap { node.group.state.items[$0] }
        let inGroup = p.item != nil && !p.solo && !p.suspendedByPlayer && record != nil
        let view = node.view
        return PlaybackStatus(
            item: p.item?.value, share: p.solo ? .solo : .group, readiness: Readiness(p.readiness), inGroupPlayback: inGroup,
            suspensionReasons: p.suspensions.map(\.reason.text), timeline: inGroup ? record.map { itemView($0, now: now) } : nil,
            participants: p.item.map { node.coordinator.participants(on: $0, view: view).map(participantView) } ?? [])
    }

    /// Every player on every present peer, with sync errors measured in the last 3 s: this
    /// agent's players' as measured, other peers' as their agents reported them (while reports
    /// flow). A paused or stopped player has none: an old error would read as a current fault.
    func playersView(now: LocalTime) -> PlayersResult {
        let local = Dictionary(uniqueKeysWithValues: node.coordinator.syncErrors(now: now, within: node.syncReports.configuration.freshness).map { ($0.playerID, $0.error) })
        var names: [UInt64: String] = [:]
        for r in node.group.state.items.values { names[r.item.stableHash] = r.item.value }
        for p in node.coordinator.players.values { if let i = p.item { names[i.stableHash] = i.value } }
        var list: [ParticipantWithItem] = []
        for (peer, record) in node.group.participants where peer == identity.peerID || node.membership.isReachable(peer) {
            for s in record.players {
                let view = ParticipantView(
                    peerID: peer.hex, peerName: name(of: peer), playerID: s.playerID, name: s.name, readiness: Readiness(s.readiness),
                    suspensionReasons: s.suspensions.map(\.text), local: peer == identity.peerID)
                let item = s.itemHash.map { names[$0] ?? String($0, radix: 16) }
                let syncError = (peer == identity.peerID ? local : node.syncReports.errors(of: peer, now: now))[s.playerID]?.ns
                list.append(ParticipantWithItem(participant: view, item: item, solo: s.solo, outputLatencyNs: s.outputLatency.ns, startLatencyNs: s.startLatency.ns, syncErrorNs: syncError))
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
