/// How a player's `load` went.
public enum LoadOutcome: Sendable, Equatable {
    /// The group already had a timeline for the item: the player follows it.
    case adopted
    /// The item is new to the group: the player proposed it, and it is now the group's item.
    case proposed
    /// The player plays it for its own user, not coordinated.
    case solo
}

/// Why a player request could not be carried out.
public enum PlayerError: Error, Sendable, Equatable, CustomStringConvertible {
    case unknownPlayer
    case noItem
    case noGroupItem
    case unknownSuspension(UInt32)
    case command(CommandError)

    public var description: String {
        switch self {
        case .unknownPlayer: "no such player (say hello as a player first)"
        case .noItem: "the player has no item; load one first"
        case .noGroupItem: "the group plays nothing yet"
        case .unknownSuspension(let id): "no suspension \(id) is active"
        case .command(let e): e.description
        }
    }
}

extension Node {
    // MARK: - Players: inputs

    public mutating func addPlayer(id: UInt32, info: PlayerSession.Info, now: Int64) -> [NodeDirective] {
        players[id] = PlayerSession(id: id, info: info, sync: configuration.sync)
        return publishPlayers(now: now)
    }

    public mutating func removePlayer(id: UInt32, now: Int64) -> [NodeDirective] {
        guard players.removeValue(forKey: id) != nil else { return [] }
        return publishPlayers(now: now) + refreshPlayers(now: now)
    }

    /// The player loaded `item`: alone (`solo`), or with the group, adopting the group's
    /// timeline for it if there is one, or proposing it to the group.
    public mutating func playerLoad(id: UInt32, item: ItemID, metadata: ItemMetadata, solo: Bool, now: Int64) -> ([NodeDirective], Result<LoadOutcome, PlayerError>) {
        guard var p = players[id] else { return ([], .failure(.unknownPlayer)) }
        p.item = item
        p.metadata = metadata
        p.solo = solo
        p.readiness = .loading
        p.suspensions.removeAll { $0.imposed }
        p.toldTimeline = nil
        p.toldWaitingFor = nil
        p.toldParticipants = nil
        p.lastReport = nil
        p.sync.reset()
        players[id] = p
        var out = publishPlayers(now: now)
        let outcome: LoadOutcome
        if solo {
            outcome = .solo
        } else if replica.state.items[item] != nil {
            outcome = .adopted
            if replica.state.current?.item != item {
                // Following an item the group still has a timeline for: propose it as the group's item.
                out += issue(.load(item, metadata), now: now).0
            }
        } else {
            outcome = .proposed
            out += issue(.load(item, metadata), now: now).0
        }
        out += refreshPlayers(now: now)
        return (out, .success(outcome))
    }

    /// The player loads what the group plays.
    public mutating func playerJoinGroup(id: UInt32, now: Int64) -> ([NodeDirective], Result<CurrentRecord, PlayerError>) {
        guard let current = replica.state.current, let item = current.item else { return ([], .failure(.noGroupItem)) }
        let (out, result) = playerLoad(id: id, item: item, metadata: current.metadata, solo: false, now: now)
        return (out, result.map { _ in current })
    }

    public mutating func playerUnload(id: UInt32, now: Int64) -> [NodeDirective] {
        guard var p = players[id] else { return [] }
        p.item = nil
        p.readiness = .loading
        p.suspensions.removeAll { $0.imposed }
        players[id] = p
        return publishPlayers(now: now) + refreshPlayers(now: now)
    }

    public mutating func playerReadiness(id: UInt32, _ readiness: PlayerStatus.Readiness, now: Int64) -> [NodeDirective] {
        guard var p = players[id], p.readiness != readiness else { return [] }
        p.readiness = readiness
        players[id] = p
        return publishPlayers(now: now) + refreshPlayers(now: now)
    }

    /// A transport intent from the player's own UI, for its item.
    public mutating func playerIntent(id: UInt32, _ command: GroupCommand, now: Int64) -> ([NodeDirective], Result<ItemRecord?, PlayerError>) {
        guard let p = players[id] else { return ([], .failure(.unknownPlayer)) }
        guard let item = p.item else { return ([], .failure(.noItem)) }
        if p.solo || p.suspendedByPlayer { return ([], .success(nil)) }  // its own business
        let (out, result) = issue(command, item: item, reason: nil, now: now)
        return (out + refreshPlayers(now: now), result.mapError { .command($0) })
    }

    /// Start at once, without waiting for the others (SharePlay's playImmediately).
    public mutating func playerPlayImmediately(id: UInt32, rate: Double?, now: Int64) -> ([NodeDirective], Result<ItemRecord?, PlayerError>) {
        guard let p = players[id] else { return ([], .failure(.unknownPlayer)) }
        guard let item = p.item else { return ([], .failure(.noItem)) }
        let (out, result) = issue(.play(rate: rate), item: item, reason: "play-immediately", now: now)
        return (out + refreshPlayers(now: now), result.mapError { .command($0) })
    }

    /// The player reports that at local time `at` it was at media `position`.
    public mutating func playerPosition(id: UInt32, position: Int64, at: Int64, now: Int64) -> [NodeDirective] {
        guard var p = players[id] else { return [] }
        p.lastReport = (position, at)
        defer { players[id] = p }
        guard p.inGroupPlayback, !p.isSuspended, p.readiness == .ready, let item = p.item,
            let record = replica.state.items[item], record.timeline.phase == .playing,
            let timeline = localTimeline(of: record, now: now)
        else { return [] }
        // Not before the timeline's instant: a player still waiting to start is not late.
        guard let anchor = localAnchor(of: record, now: now), at >= anchor.time else { return [] }
        let lead = max(p.info.startLatencyNs, 2 * Nanos.millisecond)
        guard let correction = p.sync.onReport(position: position, reportedAt: at, timeline: timeline, outputLatencyNs: p.info.outputLatencyNs, canChangeRate: p.info.canChangeRate, leadNs: lead, now: now) else { return [] }
        return [.tellPlayer(id, .correction(correction))]
    }

    /// The player leaves group playback for a while; returns the suspension's id.
    public mutating func playerBeginSuspension(id: UInt32, reason: String, now: Int64) -> ([NodeDirective], Result<UInt32, PlayerError>) {
        guard var p = players[id] else { return ([], .failure(.unknownPlayer)) }
        let sid = p.nextSuspensionID
        p.nextSuspensionID += 1
        p.suspensions.append(.init(id: sid, reason: reason.truncated(toUTF8: PlayerStatus.maxReasonBytes), imposed: false))
        players[id] = p
        var out: [NodeDirective] = [.tellPlayer(id, .suspension(began: true, id: sid, reason: reason, imposed: false))]
        out += publishPlayers(now: now) + refreshPlayers(now: now)
        return (out, .success(sid))
    }

    /// Ends a suspension; with `proposedPosition`, the whole group moves there (a scrub ending).
    public mutating func playerEndSuspension(id: UInt32, suspension sid: UInt32, proposedPosition: Int64?, now: Int64) -> ([NodeDirective], Result<Void, PlayerError>) {
        guard var p = players[id] else { return ([], .failure(.unknownPlayer)) }
        guard let index = p.suspensions.firstIndex(where: { $0.id == sid && !$0.imposed }) else { return ([], .failure(.unknownSuspension(sid))) }
        let ended = p.suspensions.remove(at: index)
        p.toldTimeline = nil
        p.toldWaitingFor = nil
        p.sync.reset()
        players[id] = p
        var out: [NodeDirective] = [.tellPlayer(id, .suspension(began: false, id: sid, reason: ended.reason, imposed: false))]
        if let position = proposedPosition, let item = p.item, !p.solo {
            let (d, result) = issue(.seek(position: position), item: item, reason: "suspension-ended", now: now)
            if case .failure(let e) = result { return (out, .failure(.command(e))) }
            out += d
        }
        out += publishPlayers(now: now) + refreshPlayers(now: now)
        return (out, .success(()))
    }

    // MARK: - Participants

    /// Participants of group playback on `item`: every reachable peer's players on it (and ours),
    /// not alone.
    public func participants(on item: ItemID) -> [ParticipantInfo] {
        let hash = item.stableHash
        var out: [ParticipantInfo] = []
        for (peer, record) in participants where peer == identity.peer || membership.isReachable(peer) {
            for s in record.players where s.itemHash == hash && !s.solo {
                out.append(ParticipantInfo(peer: peer, playerID: s.playerID, name: s.name, readiness: s.readiness, suspensions: s.suspensions, local: peer == identity.peer))
            }
        }
        return out.sorted { ($0.peer, $0.playerID) < ($1.peer, $1.playerID) }
    }

    /// Who a waiting group still waits for on `item`: players not ready, and players suspended
    /// for a reason that makes the group wait. Players suspended for other reasons do not count.
    public func blockers(on item: ItemID) -> [WaitingFor] {
        participants(on: item).compactMap { p in
            if let reason = p.suspensions.first(where: { configuration.waitingReasons.contains($0) }) {
                return WaitingFor(peer: p.peer, playerID: p.playerID, name: p.name, why: reason)
            }
            guard p.suspensions.isEmpty, p.readiness != .ready else { return nil }
            return WaitingFor(peer: p.peer, playerID: p.playerID, name: p.name, why: p.readiness.description)
        }
    }

    /// Publishes our players to the peers (and our own participant record).
    mutating func publishPlayers(now: Int64) -> [NodeDirective] {
        var out = setLocalPlayers(players.values.sorted { $0.id < $1.id }.map(\.status), now: now)
        if !out.isEmpty { out.append(.participantsChanged) }
        return out
    }

    // MARK: - Coordination

    /// Brings every local player up to date with the group, starts waiting timelines whose
    /// participants are ready (when this peer is the one to), and imposes or lifts stall recovery.
    public mutating func refreshPlayers(now: Int64) -> [NodeDirective] {
        var out: [NodeDirective] = []
        out += startWaitingTimelines(now: now)
        var changed = false
        for id in players.keys.sorted() {
            guard var p = players[id] else { continue }
            out += refresh(&p, now: now, changed: &changed)
            players[id] = p
        }
        if changed {
            out += publishPlayers(now: now)
            // Readiness blockers may have changed with the imposed suspensions.
            out += startWaitingTimelines(now: now)
        }
        return out
    }

    private mutating func refresh(_ p: inout PlayerSession, now: Int64, changed: inout Bool) -> [NodeDirective] {
        var out: [NodeDirective] = []
        let id = p.id

        // The group's item, for the proposal event.
        if let current = replica.state.current, p.toldProposal != current.stamp {
            if p.toldProposal != nil || current.item != p.item {
                out.append(.tellPlayer(id, .itemProposed(current)))
            }
            p.toldProposal = current.stamp
        }

        guard let item = p.item, !p.solo else {
            if p.inGroupPlayback {
                p.inGroupPlayback = false
                out.append(.tellPlayer(id, .groupPlayback(active: false, reason: p.solo ? "solo" : "no item")))
            }
            return out
        }

        // Participants of its item.
        let list = participants(on: item)
        if p.toldParticipants != list {
            p.toldParticipants = list
            out.append(.tellPlayer(id, .participants(item: item, list)))
        }

        let record = replica.state.items[item]
        // Stall recovery: a player that is not ready while the group plays steps out, and comes
        // back when it is ready.
        if let record, record.timeline.phase == .playing, p.readiness != .ready, !p.suspensions.contains(where: \.imposed), !p.suspendedByPlayer {
            let sid = p.nextSuspensionID
            p.nextSuspensionID += 1
            p.suspensions.append(.init(id: sid, reason: "stall-recovery", imposed: true))
            out.append(.tellPlayer(id, .suspension(began: true, id: sid, reason: "stall-recovery", imposed: true)))
            changed = true
        } else if let imposed = p.suspensions.first(where: \.imposed), p.readiness == .ready || record?.timeline.phase != .playing {
            p.suspensions.removeAll { $0.imposed }
            p.toldTimeline = nil
            p.sync.reset()
            out.append(.tellPlayer(id, .suspension(began: false, id: imposed.id, reason: imposed.reason, imposed: true)))
            changed = true
        }

        let active = !p.suspendedByPlayer && record != nil
        if active != p.inGroupPlayback {
            p.inGroupPlayback = active
            out.append(.tellPlayer(id, .groupPlayback(active: active, reason: active ? "following \(item.value.truncated(toUTF8: 64))" : (p.suspendedByPlayer ? "suspended: \(p.suspensions.map(\.reason).joined(separator: ", "))" : "no timeline yet"))))
        }
        guard active, let record, !p.suspendedByPlayer else { return out }

        switch record.timeline.phase {
        case .waiting:
            let waiting = blockers(on: item)
            if p.toldTimeline != record.stamp || p.toldWaitingFor != waiting {
                p.toldTimeline = record.stamp
                p.toldWaitingFor = waiting
                p.sync.reset()
                let at = max(localAnchor(of: record, now: now)?.time ?? now, now)
                out.append(.tellPlayer(id, .wait(item: item, position: record.timeline.position, at: at, waitingFor: waiting, record: record)))
            }
        case .playing, .paused, .stopped:
            guard p.toldTimeline != record.stamp, let timeline = localTimeline(of: record, now: now) else { return out }
            p.toldTimeline = record.stamp
            p.toldWaitingFor = nil
            p.sync.reset()
            // Act no earlier than the player can: a timeline learnt late is joined where it is.
            let at = max(timeline.anchorTime, now + p.info.startLatencyNs)
            let position = timeline.phase == .playing ? timeline.position(at: at + p.info.outputLatencyNs) : timeline.position
            out.append(.tellPlayer(id, .timeline(item: item, phase: timeline.phase, position: position, rate: timeline.rate, at: at, record: record)))
        }
        return out
    }

    /// Waiting timelines this peer should start now (participants ready, or waited too long),
    /// and playing ones it should hold because one of its players is suspended for a reason
    /// that makes the group wait.
    mutating func startWaitingTimelines(now: Int64) -> [NodeDirective] {
        var out: [NodeDirective] = []
        for p in players.values {
            guard let item = p.item, !p.solo, let suspension = p.suspensions.first(where: { configuration.waitingReasons.contains($0.reason) }),
                let record = replica.state.items[item], record.timeline.phase == .playing, let timeline = localTimeline(of: record, now: now)
            else { continue }
            let at = now + leadTime(for: item, now: now)
            let (stamp, version) = replica.nextStamp()
            let hold = ItemRecord(item: item, metadata: record.metadata, timeline: Timeline(phase: .waiting, anchorTime: at, position: timeline.position(at: at), rate: record.timeline.rate), action: .pause, reason: "waiting: \(suspension.reason)", stamp: stamp, version: version)
            out += broadcast(.item(hold), now: now)
            out.append(.groupChanged(GroupChange(kind: .item(hold), local: true)))
        }
        for record in replica.state.items.values where record.timeline.phase == .waiting {
            guard isResponsibleForStart(record) else { continue }
            let blockers = blockers(on: record.item)
            var reason: String?
            if blockers.isEmpty {
                reason = "ready"
            } else if let anchor = localAnchor(of: record, now: now), now - anchor.time >= configuration.waitTimeoutNs {
                reason = "timeout"
            }
            guard let reason else { continue }
            let at = now + leadTime(for: record.item, now: now)
            let (stamp, version) = replica.nextStamp()
            let start = ItemRecord(item: record.item, metadata: record.metadata, timeline: Timeline(phase: .playing, anchorTime: at, position: record.timeline.position, rate: record.timeline.rate), action: .start, reason: reason, stamp: stamp, version: version)
            out += broadcast(.item(start), now: now)
            out.append(.groupChanged(GroupChange(kind: .item(start), local: true)))
        }
        return out
    }

    /// The origin of a waiting timeline starts it; if the origin is gone, the reachable peer
    /// with the smallest id among those with players on the item (or among all) does.
    func isResponsibleForStart(_ record: ItemRecord) -> Bool {
        let origin = record.stamp.origin
        if origin == identity.peer { return true }
        if membership.isReachable(origin) { return false }
        let onItem = Set(participants(on: record.item).map(\.peer))
        let candidates = (onItem.isEmpty ? Set(membership.reachable) : onItem.filter { $0 == identity.peer || membership.isReachable($0) }).union(onItem.isEmpty ? [identity.peer] : [])
        return candidates.min() == identity.peer
    }

    /// When a waiting timeline times out, if one does.
    func playersDeadline(now: Int64) -> Int64 {
        var next = Int64.max
        for record in replica.state.items.values where record.timeline.phase == .waiting && isResponsibleForStart(record) {
            if let anchor = localAnchor(of: record, now: now) { next = min(next, anchor.time + configuration.waitTimeoutNs) }
        }
        return next
    }
}
