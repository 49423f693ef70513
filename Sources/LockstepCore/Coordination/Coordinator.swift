/// Player coordination, SharePlay's semantics on Lockstep's group state: the players connected
/// to this agent, what each is told, and the commands that follow from them (a group that waits
/// for its participants to be ready, suspensions, stall recovery, play immediately, who caused
/// each change).
///
/// A pure instance: every input is an `on…` call with the current local time and a ``GroupView``
/// of the rest of the node; every output a ``Directive``. It never changes the replicated state
/// itself: a command becomes a ``Proposal`` that ``Dissemination`` stamps and spreads, after
/// which the owner (``Node``) calls ``onGroupChanged(view:now:)`` so that players follow.
///
/// Terms: a *participant* of an item is a player on it, with the group (not solo), on this node
/// or a reachable peer. A *blocker* is a participant the group waits for before it plays: not
/// ready, or suspended for a reason in ``Configuration/waitingReasons`` (SharePlay's
/// `suspensionReasonsThatTriggerWaiting`). A *waiting* timeline is started by its origin (or, if
/// the origin is gone, by the reachable peer with the smallest id among the item's participants)
/// once no blockers remain, or after ``Configuration/waitTimeout``.
public struct Coordinator: Sendable {
    public struct Configuration: Sendable {
        public var sync = SyncPolicy.Configuration()
        public var lead = LeadTime.Configuration()
        /// Suspension reasons that make the group wait (held) instead of playing on without the
        /// suspended player (SharePlay's `suspensionReasonsThatTriggerWaiting`).
        public var waitingReasons: Set<SuspensionReason> = []
        /// A group waiting for readiness starts anyway after this long; laggards catch up later.
        public var waitTimeout: TimeSpan = .seconds(8)
        /// What a player is told beyond its start latency when it joins a timeline whose anchor is
        /// already past or too close (a late join, the end of a suspension, `ready` into a playing
        /// group): the time for the event to reach the player and be read, so that it still
        /// arrives at least `start_latency_ns` ahead (measured: 0.7–1.9 ms to a Python player).
        public var playerNotice: TimeSpan = .milliseconds(5)

        public init() {}
    }

    /// What to do.
    public enum Directive: Sendable, Equatable {
        /// Tell a local player something.
        case tell(UInt32, PlayerInstruction)
        /// A command for the group state (``Dissemination`` stamps and spreads it).
        case propose(Proposal)
        /// This node's players changed: publish them to the peers.
        case publish([PlayerStatus])
        /// The reply to the request being handled.
        case reply(RequestOutcome)
    }

    public let me: PeerID
    public let configuration: Configuration
    /// The players connected to this agent.
    public private(set) var players: [UInt32: PlayerSession] = [:]
    /// The participants last worked out, for the item and the view's presence version they were
    /// worked out for: every change to the group refreshes every player, and at 64 peers
    /// gathering and sorting their players each time was a fifth of handling an operation
    /// (docs/scale.md, twenty-fifth step).
    private var participantsMemo: (item: ItemID, version: GroupView.PresenceVersion, list: [ParticipantInfo])?

    public init(me: PeerID, configuration: Configuration = .init()) {
        self.me = me
        self.configuration = configuration
    }

    // MARK: - Players come and go

    /// A player said hello.
    public mutating func onPlayerHello(id: UInt32, info: PlayerSession.Info) -> [Directive] {
        players[id] = PlayerSession(id: id, info: info, sync: configuration.sync)
        return [publish()]
    }

    /// A player disconnected.
    public mutating func onPlayerGone(id: UInt32) -> [Directive] {
        guard players.removeValue(forKey: id) != nil else { return [] }
        return [publish()]
    }

    // MARK: - Player requests

    /// The player loaded `item`: alone (`solo`), or with the group, adopting the group's
    /// timeline for it if there is one, or proposing it to the group.
    public mutating func onPlayerLoad(id: UInt32, item: ItemID, metadata: ItemMetadata, solo: Bool, view: GroupView, now: LocalTime) -> [Directive] {
        guard var p = players[id] else { return [.reply(.refused(.unknownPlayer))] }
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
        let outcome: LoadOutcome
        var out: [Directive] = []
        if solo {
            outcome = .solo
        } else if view.state.items[item] != nil {
            outcome = .adopted
            // Following an item the group still has a timeline for: propose it as the group's item.
            if view.state.current?.item != item { out += load(item, metadata, by: p.info.name, view: view, now: now) }
        } else {
            outcome = .proposed
            out += load(item, metadata, by: p.info.name, view: view, now: now)
        }
        return [.reply(.loaded(outcome, item)), publish()] + out
    }

    /// The player loads what the group plays.
    public mutating func onPlayerJoinGroup(id: UInt32, view: GroupView, now: LocalTime) -> [Directive] {
        guard players[id] != nil else { return [.reply(.refused(.unknownPlayer))] }
        guard let current = view.state.current, let item = current.item else { return [.reply(.refused(.noGroupItem))] }
        var out = onPlayerLoad(id: id, item: item, metadata: current.metadata, solo: false, view: view, now: now)
        // Joining adopts the group's item, whatever the load found.
        if let i = out.firstIndex(where: { if case .reply = $0 { true } else { false } }) { out[i] = .reply(.loaded(.adopted, item)) }
        return out
    }

    /// The player left its item (and group playback).
    public mutating func onPlayerUnload(id: UInt32) -> [Directive] {
        guard var p = players[id] else { return [.reply(.refused(.unknownPlayer))] }
        p.item = nil
        p.readiness = .loading
        p.suspensions.removeAll { $0.imposed }
        players[id] = p
        return [.reply(.done), publish()]
    }

    /// The player can play at once (`ready`) or cannot (`loading`, `buffering`).
    public mutating func onPlayerReadiness(id: UInt32, _ readiness: PlayerStatus.Readiness) -> [Directive] {
        guard var p = players[id] else { return [.reply(.refused(.unknownPlayer))] }
        guard p.readiness != readiness else { return [.reply(.done)] }
        p.readiness = readiness
        players[id] = p
        return [.reply(.done), publish()]
    }

    /// The player's start latency changed (it measured itself, or its next start needs more or
    /// less time): group commands are anchored with the new value from now on, and the peers
    /// learn it with this node's players.
    public mutating func onPlayerStartLatency(id: UInt32, _ latency: TimeSpan) -> [Directive] {
        guard var p = players[id] else { return [.reply(.refused(.unknownPlayer))] }
        let clamped = latency.clamped(to: Limits.latencyNs)
        guard p.info.startLatency != clamped else { return [.reply(.done)] }
        p.info.startLatency = clamped
        players[id] = p
        return [.reply(.done), publish()]
    }

    /// A transport intent from the player's own UI, for its item.
    public mutating func onPlayerIntent(id: UInt32, _ command: GroupCommand, view: GroupView, now: LocalTime) -> [Directive] {
        guard let p = players[id] else { return [.reply(.refused(.unknownPlayer))] }
        guard let item = p.item else { return [.reply(.refused(.noItem))] }
        // A solo or suspended player's intents are its own business.
        if p.solo || p.suspendedByPlayer { return [.reply(.done)] }
        return onCommand(command, item: item, reason: nil, by: p.info.name, view: view, now: now)
    }

    /// Start at once, without waiting for the others (SharePlay's playImmediately).
    public mutating func onPlayerPlayImmediately(id: UInt32, rate: Double?, view: GroupView, now: LocalTime) -> [Directive] {
        guard let p = players[id] else { return [.reply(.refused(.unknownPlayer))] }
        guard let item = p.item else { return [.reply(.refused(.noItem))] }
        return onCommand(.play(rate: rate), item: item, reason: .playImmediately, by: p.info.name, view: view, now: now)
    }

    /// The player reports that at `at` it was at `position`.
    public mutating func onPlayerPosition(id: UInt32, position: MediaPosition, at: LocalTime, view: GroupView, now: LocalTime) -> [Directive] {
        guard var p = players[id] else { return [] }
        p.lastReport = (position, at)
        defer { players[id] = p }
        guard p.inGroupPlayback, !p.isSuspended, p.readiness == .ready, let item = p.item,
            let record = view.state.items[item], record.timeline.phase == .playing,
            let timeline = view.timelines.timeline(of: record, now: now),
            // Not before the timeline's instant, nor before the instant the player was told to
            // join it (later, for a timeline learnt late): a player still waiting to start is not late.
            let anchor = view.timelines.anchorTime(of: record, now: now), at >= anchor,
            p.toldTimeline != record.stamp || at >= (p.toldAt ?? anchor)
        else { return [] }
        let lead = max(p.info.startLatency, .milliseconds(2))
        guard
            let correction = p.sync.onReport(
                position: position, reportedAt: at, timeline: timeline, outputLatency: p.info.outputLatency,
                canChangeRate: p.info.canChangeRate, lead: lead, now: now)
        else { return [] }
        return [.tell(id, .correction(correction))]
    }

    /// The player leaves group playback for a while.
    public mutating func onPlayerBeginSuspension(id: UInt32, reason: SuspensionReason) -> [Directive] {
        guard var p = players[id] else { return [.reply(.refused(.unknownPlayer))] }
        let sid = p.newSuspensionID()
        p.suspensions.append(.init(id: sid, reason: reason, imposed: false))
        players[id] = p
        return [.reply(.suspensionBegan(sid)), .tell(id, .suspension(began: true, id: sid, reason: reason, imposed: false)), publish()]
    }

    /// Ends a suspension (the player's latest when `suspension` is nil); with `proposedPosition`,
    /// the whole group moves there (a scrub ending).
    public mutating func onPlayerEndSuspension(id: UInt32, suspension: UInt32?, proposedPosition: MediaPosition?, view: GroupView, now: LocalTime) -> [Directive] {
        guard var p = players[id] else { return [.reply(.refused(.unknownPlayer))] }
        guard let sid = suspension ?? p.suspensions.last(where: { !$0.imposed })?.id else { return [.reply(.refused(.notSuspended))] }
        guard let index = p.suspensions.firstIndex(where: { $0.id == sid && !$0.imposed }) else { return [.reply(.refused(.unknownSuspension(sid)))] }
        let ended = p.suspensions.remove(at: index)
        p.toldTimeline = nil
        p.toldWaitingFor = nil
        p.sync.reset()
        players[id] = p
        var out: [Directive] = [.tell(id, .suspension(began: false, id: sid, reason: ended.reason, imposed: false))]
        if let position = proposedPosition, let item = p.item, !p.solo {
            let moved = onCommand(.seek(position: position), item: item, reason: .suspensionEnded, by: p.info.name, view: view, now: now)
            if let refusal = moved.first(where: { if case .reply(.refused) = $0 { true } else { false } }) { return [refusal] + out + [publish()] }
            out += moved.filter { if case .reply = $0 { false } else { true } }
        }
        return [.reply(.done)] + out + [publish()]
    }

    // MARK: - Commands

    /// Issues `command` for `item` (default: the group's current item), anchored a lead time in
    /// the future when it moves a playing timeline.
    public func onCommand(_ command: GroupCommand, item: ItemID? = nil, reason: CommandReason?, by: String? = nil, view: GroupView, now: LocalTime) -> [Directive] {
        switch command {
        case .load(let id, let metadata):
            return [.reply(.done)] + load(id, metadata, by: by, view: view, now: now, reason: reason)
        case .stop:
            let target = (item ?? view.state.current?.item).flatMap { view.state.items[$0] != nil ? $0 : nil }
            return [.reply(.done), .propose(Proposal(item: target, command: .stop, reason: reason, by: by, at: now))]
        default:
            guard let id = item ?? view.state.current?.item, let existing = view.state.items[id] else { return [.reply(.refused(.noItem))] }
            guard let current = view.timelines.timeline(of: existing, now: now) else { return [.reply(.refused(.clockUnknown(existing.clock)))] }
            switch timeline(for: command, from: current, nominalRate: existing.timeline.rate, item: id, immediately: reason == .playImmediately, view: view, now: now) {
            case .success(let timeline):
                let op: OperationCommand
                switch command {
                case .play(let rate): op = .play(rate: rate, waits: timeline.phase == .waiting)
                case .pause: op = .pause
                case .seek(let position): op = .seek(position)
                case .setRate(let rate): op = .rate(rate)
                case .load, .stop: return [.reply(.done)]
                }
                return [.reply(.done), .propose(Proposal(item: id, command: op, reason: reason, by: by, at: timeline.anchorTime, result: timeline))]
            case .failure(let error):
                return [.reply(.refused(error))]
            }
        }
    }

    /// `item` becomes the group's item; its timeline starts paused at 0 if it has none yet.
    private func load(_ item: ItemID, _ metadata: ItemMetadata, by: String? = nil, view: GroupView, now: LocalTime, reason: CommandReason? = nil) -> [Directive] {
        [.propose(Proposal(item: item, command: .load(metadata), reason: reason, by: by, at: now))]
    }

    /// The new timeline (on the local clock) that `command` makes of `current` (the group's
    /// timeline on the local clock, which may advance at the origin's pace, `nominalRate` scaled).
    ///
    /// `play` waits (a waiting timeline) while participants on the item are not ready, unless
    /// `immediately`; the start then follows when they are (see ``onGroupChanged(view:now:)``).
    func timeline(
        for command: GroupCommand, from current: Timeline<LocalTime>, nominalRate: Double, item: ItemID, immediately: Bool, view: GroupView, now: LocalTime
    ) -> Result<Timeline<LocalTime>, RequestError> {
        let at = now + leadTime(for: item, view: view, now: now)
        switch command {
        case .play(let rate):
            let r = rate ?? nominalRate
            guard Limits.rate.contains(r) else { return .failure(.invalidRate(r)) }
            if current.phase == .playing && r == nominalRate { return .success(current) }
            let position = current.phase == .playing ? current.position(at: at) : current.position
            if current.phase != .playing && !immediately && !blockers(on: item, view: view).isEmpty {
                return .success(Timeline(phase: .waiting, anchorTime: now, position: position, rate: r))
            }
            return .success(Timeline(phase: .playing, anchorTime: at, position: position, rate: r))
        case .pause:
            if current.phase == .playing {
                return .success(Timeline(phase: .paused, anchorTime: at, position: current.position(at: at), rate: nominalRate))
            }
            return .success(Timeline(phase: .paused, anchorTime: now, position: current.position, rate: nominalRate))
        case .seek(let position):
            if let duration = view.state.items[item]?.metadata.duration, position.ns > duration.ns {
                return .failure(.positionPastEnd(position, duration: duration))
            }
            if current.phase == .playing {
                return .success(Timeline(phase: .playing, anchorTime: at, position: position, rate: nominalRate))
            }
            return .success(Timeline(phase: current.phase == .stopped ? .paused : current.phase, anchorTime: now, position: position, rate: nominalRate))
        case .setRate(let r):
            guard Limits.rate.contains(r) else { return .failure(.invalidRate(r)) }
            if current.phase == .playing {
                return .success(Timeline(phase: .playing, anchorTime: at, position: current.position(at: at), rate: r))
            }
            return .success(Timeline(phase: current.phase, anchorTime: now, position: current.position, rate: r))
        case .load, .stop:
            return .success(current)
        }
    }

    // MARK: - The group changed

    /// Commands crossed (``ConcurrentCommands``): every player in group playback is told, so
    /// that nobody wonders where an intent went.
    public func onConcurrentCommands(_ report: ConcurrentCommands) -> [Directive] {
        players.values.filter { $0.item != nil && !$0.solo }.sorted { $0.id < $1.id }.map { .tell($0.id, .concurrent(report)) }
    }

    /// Brings every local player up to date with the group, starts waiting timelines whose
    /// participants are ready (when this peer is the one to), holds playing ones for waiting
    /// reasons, and imposes or lifts stall recovery. Call it after anything that may matter to
    /// players (a record applied, participants or reachability changed) and on every tick.
    public mutating func onGroupChanged(view: GroupView, now: LocalTime) -> [Directive] {
        var out = startWaitingTimelines(view: view, now: now)
        var changed = false
        for id in players.keys.sorted() {
            guard var p = players[id] else { continue }
            out += refresh(&p, view: view, now: now, changed: &changed)
            players[id] = p
        }
        if changed { out.append(publish()) }
        return out
    }

    private func publish() -> Directive {
        .publish(players.values.sorted { $0.id < $1.id }.map(\.status))
    }

    private mutating func refresh(_ p: inout PlayerSession, view: GroupView, now: LocalTime, changed: inout Bool) -> [Directive] {
        var out: [Directive] = []
        let id = p.id

        // The group's item, for the proposal event.
        if let current = view.state.current, p.toldProposal != current.stamp {
            if p.toldProposal != nil || current.item != p.item {
                out.append(.tell(id, .itemProposed(current)))
            }
            p.toldProposal = current.stamp
        }

        guard let item = p.item, !p.solo else {
            if p.inGroupPlayback {
                p.inGroupPlayback = false
                out.append(.tell(id, .groupPlayback(active: false, reason: p.solo ? .solo : .noItem)))
            }
            return out
        }

        // Participants of its item.
        let list = keptParticipants(on: item, view: view)
        if p.toldParticipants != list {
            p.toldParticipants = list
            out.append(.tell(id, .participants(item: item, list)))
        }

        let record = view.state.items[item]
        // Stall recovery: a player that is not ready while the group plays steps out, and comes
        // back when it is ready.
        if let record, record.timeline.phase == .playing, p.readiness != .ready, !p.suspensions.contains(where: \.imposed), !p.suspendedByPlayer {
            let sid = p.newSuspensionID()
            p.suspensions.append(.init(id: sid, reason: .stallRecovery, imposed: true))
            out.append(.tell(id, .suspension(began: true, id: sid, reason: .stallRecovery, imposed: true)))
            changed = true
        } else if let imposed = p.suspensions.first(where: \.imposed), p.readiness == .ready || record?.timeline.phase != .playing {
            p.suspensions.removeAll { $0.imposed }
            p.toldTimeline = nil
            p.sync.reset()
            out.append(.tell(id, .suspension(began: false, id: imposed.id, reason: imposed.reason, imposed: true)))
            changed = true
        }

        // Any suspension takes the player out, the agent's own stall recovery included: it gets no
        // timelines until it is back (player protocol §4).
        let active = !p.isSuspended && record != nil
        if active != p.inGroupPlayback {
            p.inGroupPlayback = active
            let reason: GroupPlaybackReason =
                active ? .following(item) : p.isSuspended ? .suspended(p.suspensions.map(\.reason)) : .noTimelineYet
            out.append(.tell(id, .groupPlayback(active: active, reason: reason)))
        }
        guard active, let record else { return out }

        switch record.timeline.phase {
        case .waiting:
            let waiting = blockers(on: item, view: view)
            if p.toldTimeline != record.stamp || p.toldWaitingFor != waiting {
                p.toldTimeline = record.stamp
                p.toldWaitingFor = waiting
                p.sync.reset()
                let at = max(view.timelines.anchorTime(of: record, now: now) ?? now, now)
                out.append(.tell(id, .wait(item: item, position: record.timeline.position, at: at, waitingFor: waiting, record: record)))
            }
        case .playing, .paused, .stopped:
            guard p.toldTimeline != record.stamp, let timeline = view.timelines.timeline(of: record, now: now) else { return out }
            p.toldTimeline = record.stamp
            p.toldWaitingFor = nil
            p.sync.reset()
            // Act no earlier than the player can: a timeline learnt late is joined where it is,
            // with its start latency and the event's delivery still ahead.
            let at = max(timeline.anchorTime, now + p.info.startLatency + configuration.playerNotice)
            p.toldAt = at
            let position = timeline.phase == .playing ? timeline.position(at: at + p.info.outputLatency) : timeline.position
            out.append(.tell(id, .timeline(item: item, phase: timeline.phase, position: position, rate: timeline.rate, at: at, record: record)))
        }
        return out
    }

    /// Playing timelines to hold because a local player is suspended for a reason that makes the
    /// group wait, and waiting timelines this peer should start now (participants ready, or
    /// waited too long).
    private func startWaitingTimelines(view: GroupView, now: LocalTime) -> [Directive] {
        var out: [Directive] = []
        var held = Set<ItemID>()
        for p in players.values.sorted(by: { $0.id < $1.id }) {
            guard let item = p.item, !p.solo, !held.contains(item),
                let suspension = p.suspensions.first(where: { configuration.waitingReasons.contains($0.reason) }),
                let record = view.state.items[item], record.timeline.phase == .playing,
                let timeline = view.timelines.timeline(of: record, now: now)
            else { continue }
            held.insert(item)
            let at = now + leadTime(for: item, view: view, now: now)
            let hold = Timeline(phase: .waiting, anchorTime: at, position: timeline.position(at: at), rate: record.timeline.rate)
            out.append(.propose(Proposal(item: item, command: .hold(suspension.reason), reason: .waiting(suspension.reason), by: p.info.name, at: at, result: hold)))
        }
        for record in view.state.items.values.sorted(by: { $0.item < $1.item }) where record.timeline.phase == .waiting {
            guard isResponsibleForStart(record, view: view) else { continue }
            var reason: CommandReason?
            if blockers(on: record.item, view: view).isEmpty {
                reason = .ready
            } else if let anchor = view.timelines.anchorTime(of: record, now: now), now - anchor >= configuration.waitTimeout {
                reason = .timeout
            }
            guard let reason else { continue }
            let at = now + leadTime(for: record.item, view: view, now: now)
            let start = Timeline(phase: .playing, anchorTime: at, position: record.timeline.position, rate: record.timeline.rate)
            out.append(.propose(Proposal(item: record.item, command: .start, reason: reason, at: at, result: start)))
        }
        return out
    }

    /// The origin of a waiting timeline starts it; if the origin is gone, the reachable peer
    /// with the smallest id among those with players on the item (or among all) does.
    func isResponsibleForStart(_ record: ItemRecord, view: GroupView) -> Bool {
        let origin = record.stamp.origin
        if origin == me { return true }
        if view.reachable.contains(origin) { return false }
        let onItem = Set(participants(on: record.item, view: view).map(\.peer))
        let candidates = onItem.isEmpty ? view.reachable.union([me]) : onItem
        return candidates.min() == me
    }

    /// When a waiting timeline this node would start times out, if one does.
    public func nextDeadline(view: GroupView, now: LocalTime) -> LocalTime {
        var next = LocalTime.distantFuture
        for record in view.state.items.values where record.timeline.phase == .waiting && isResponsibleForStart(record, view: view) {
            if let anchor = view.timelines.anchorTime(of: record, now: now) { next = min(next, anchor + configuration.waitTimeout) }
        }
        return next
    }

    // MARK: - Queries

    /// This agent's players' sync errors measured within `within` of `now` (for sync reports).
    public func syncErrors(now: LocalTime, within: TimeSpan) -> [SyncReport.Entry] {
        players.compactMap { id, p in
            guard let error = p.sync.lastError, let at = p.sync.lastErrorAt, now - at <= within else { return nil }
            return SyncReport.Entry(playerID: id, error: error)
        }
    }

    /// Participants of group playback on `item`: every present peer's players on it (ours
    /// included), not alone.
    public func participants(on item: ItemID, view: GroupView) -> [ParticipantInfo] {
        let hash = item.stableHash
        var out: [ParticipantInfo] = []
        for (peer, record) in view.participants where view.isPresent(peer) {
            for s in record.players where s.itemHash == hash && !s.solo {
                out.append(ParticipantInfo(peer: peer, playerID: s.playerID, name: s.name, readiness: s.readiness, suspensions: s.suspensions, local: peer == me))
            }
        }
        return out.sorted { ($0.peer, $0.playerID) < ($1.peer, $1.playerID) }
    }

    /// ``participants(on:view:)``, kept while the item and the view's presence version stay the same.
    private mutating func keptParticipants(on item: ItemID, view: GroupView) -> [ParticipantInfo] {
        guard let version = view.presenceVersion else { return participants(on: item, view: view) }
        if let memo = participantsMemo, memo.version == version, memo.item == item { return memo.list }
        let list = participants(on: item, view: view)
        participantsMemo = (item, version, list)
        return list
    }

    /// Who a waiting group still waits for on `item`: players not ready, and players suspended
    /// for a reason that makes the group wait. Players suspended for other reasons do not count.
    public func blockers(on item: ItemID, view: GroupView) -> [WaitingFor] {
        participants(on: item, view: view).compactMap { p in
            if let reason = p.suspensions.first(where: { configuration.waitingReasons.contains($0) }) {
                return WaitingFor(peer: p.peer, playerID: p.playerID, name: p.name, why: .suspended(reason))
            }
            guard p.suspensions.isEmpty, p.readiness != .ready else { return nil }
            return WaitingFor(peer: p.peer, playerID: p.playerID, name: p.name, why: p.readiness == .buffering ? .buffering : .loading)
        }
    }

    /// How far ahead to anchor a command for `item` (see ``LeadTime``): the worst, over the
    /// reachable peers that take part, of round trip + clock bound + start latency. A peer's
    /// round trip is the longer of its clock exchanges' and its recent acknowledgements' (see
    /// ``AckDelays``: these count its agent's delay in taking a datagram in), or, for a peer
    /// this node has not timed, the longest recent intake of others' operations here.
    public func leadTime(for item: ItemID?, view: GroupView, now: LocalTime) -> TimeSpan {
        var terms: [LeadTime.Term] = []
        let hash = item?.stableHash
        for peer in view.reachable.sorted() {
            let players = view.participants[peer]?.players ?? []
            // Peers with players on other items are not waited for; peers with none still are
            // (their state must arrive in time even if nothing plays there yet).
            if let hash, !players.isEmpty, !players.contains(where: { $0.itemHash == hash }) { continue }
            let estimate = view.resolvedClock(of: peer, at: now)
            let start = players.filter { hash == nil || $0.itemHash == hash }.map(\.startLatency).max() ?? .zero
            let acked = view.ackDelays.expected(for: peer, now: now)
            let roundTrip = max(estimate?.delay ?? .zero, acked ?? .zero)
            terms.append(.init(roundTrip: roundTrip, clockBound: estimate?.errorBoundSpan(at: now) ?? .zero, startLatency: start))
        }
        let mine = view.participants[me]?.players.filter { hash == nil || $0.itemHash == hash }.map(\.startLatency).max() ?? .zero
        terms.append(.init(roundTrip: .zero, clockBound: .zero, startLatency: mine))
        return LeadTime.lead(terms, configuration: configuration.lead)
    }
}
