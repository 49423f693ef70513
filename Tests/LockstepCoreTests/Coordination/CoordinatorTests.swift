import Testing

@testable import LockstepCore

/// Player coordination alone: a hand-made view of the group in, directives out, no network.
@Suite("Coordinator")
struct CoordinatorTests {
    static let me = PeerID(high: 0, low: 1)
    static let bob = PeerID(high: 0, low: 2)
    static let film = ItemID("film")!
    static let t0 = LocalTime(ns: 10_000_000_000)

    /// A view with these records (all originated here, so no clock is needed) and participants.
    static func view(_ records: [ItemRecord] = [], current: ItemID? = nil, participants: [ParticipantRecord] = [], reachable: Set<PeerID> = []) -> GroupView {
        var state = GroupState()
        for r in records { state.merge(r) }
        if let current { state.merge(CurrentRecord(item: current, stamp: Stamp(time: 1, origin: me, incarnation: 1, seq: 1))) }
        var byPeer: [PeerID: ParticipantRecord] = [:]
        for p in participants { byPeer[p.peer] = p }
        return GroupView(me: me, state: state, participants: byPeer, reachable: reachable, timelines: LocalTimelines(me: me, clocks: PeerClocks(me: me)))
    }

    static func record(_ phase: TimelinePhase, at ns: Int64 = 10_000_000_000, origin: PeerID = me) -> ItemRecord {
        ItemRecord(
            item: film, timeline: Timeline(phase: phase, anchorTime: PeerTime(ns: ns), position: .zero, rate: 1), clock: me, action: .play,
            stamp: Stamp(time: 5, origin: origin, incarnation: 1, seq: 5))
    }

    static func player(_ id: UInt32, _ readiness: PlayerStatus.Readiness, peer: PeerID = bob, suspensions: [SuspensionReason] = []) -> ParticipantRecord {
        ParticipantRecord(peer: peer, incarnation: 1, version: 1, players: [PlayerStatus(playerID: id, name: "p\(id)", itemHash: film.stableHash, readiness: readiness, suspensions: suspensions)])
    }

    static func proposals(_ d: [Coordinator.Directive]) -> [Proposal] {
        d.compactMap { if case .propose(let p) = $0 { p } else { nil } }
    }

    static func coordinator(_ configure: (inout Coordinator.Configuration) -> Void = { _ in }) -> Coordinator {
        var c = Coordinator.Configuration()
        configure(&c)
        var k = Coordinator(me: me, configuration: c)
        _ = k.onPlayerHello(id: 1, info: .init(name: "tv", canChangeRate: true, startLatency: .milliseconds(20)))
        return k
    }

    @Test("loading an item the group does not know proposes it, paused at 0, and replies first")
    func loadProposes() {
        var k = Self.coordinator()
        let d = k.onPlayerLoad(id: 1, item: Self.film, metadata: ItemMetadata(title: "Night"), solo: false, view: Self.view(), now: Self.t0)
        #expect(d.first == .reply(.loaded(.proposed, Self.film)))
        #expect(Self.proposals(d) == [Proposal(item: Self.film, command: .load(ItemMetadata(title: "Night")), by: "tv", at: Self.t0)])
    }

    @Test("loading an item the group has a timeline for adopts it; a solo load proposes nothing")
    func loadAdopts() {
        var k = Self.coordinator()
        let view = Self.view([Self.record(.paused)], current: Self.film)
        let d = k.onPlayerLoad(id: 1, item: Self.film, metadata: ItemMetadata(), solo: false, view: view, now: Self.t0)
        #expect(d.first == .reply(.loaded(.adopted, Self.film)))
        #expect(Self.proposals(d).isEmpty)
        #expect(Self.proposals(k.onPlayerLoad(id: 1, item: ItemID("mine")!, metadata: ItemMetadata(), solo: true, view: view, now: Self.t0)).isEmpty)
    }

    @Test("play with a participant not ready makes the timeline wait; with none it plays a lead time ahead")
    func playWaits() {
        let k = Self.coordinator()
        let waiting = Self.view([Self.record(.paused)], current: Self.film, participants: [Self.player(2, .loading)], reachable: [Self.bob])
        let d = k.onCommand(.play(rate: nil), reason: nil, view: waiting, now: Self.t0)
        let wait = Timeline(phase: .waiting, anchorTime: Self.t0, position: .zero, rate: 1)
        #expect(Self.proposals(d) == [Proposal(item: Self.film, command: .play(rate: nil, waits: true), at: Self.t0, result: wait)])
        let ready = Self.view([Self.record(.paused)], current: Self.film, participants: [Self.player(2, .ready)], reachable: [Self.bob])
        let lead = k.leadTime(for: Self.film, view: ready, now: Self.t0)
        let play = Timeline(phase: .playing, anchorTime: Self.t0 + lead, position: .zero, rate: 1)
        #expect(Self.proposals(k.onCommand(.play(rate: nil), reason: nil, view: ready, now: Self.t0)) == [
            Proposal(item: Self.film, command: .play(rate: nil, waits: false), at: Self.t0 + lead, result: play)
        ])
    }

    @Test("the lead counts how long a peer recently took to acknowledge operations, beyond its clock round trip, for 10 minutes")
    func leadCountsAckDelays() {
        let k = Self.coordinator()
        let plain = Self.view([Self.record(.paused)], current: Self.film, participants: [Self.player(2, .ready)], reachable: [Self.bob])
        var delays = AckDelays()
        delays.record(.milliseconds(40), from: Self.bob, at: Self.t0)
        let slow = GroupView(me: plain.me, state: plain.state, participants: plain.participants, reachable: plain.reachable, timelines: plain.timelines, ackDelays: delays)
        let before = k.leadTime(for: Self.film, view: plain, now: Self.t0)
        #expect(k.leadTime(for: Self.film, view: slow, now: Self.t0) - before == .milliseconds(40))
        #expect(k.leadTime(for: Self.film, view: slow, now: Self.t0 + .seconds(601)) == before, "a delay 10 minutes old no longer counts")
        let play = Self.proposals(k.onCommand(.play(rate: nil), reason: nil, view: slow, now: Self.t0)).first
        #expect(play?.at == Self.t0 + before + .milliseconds(40))
    }

    @Test("for a peer this node never timed, the lead counts the longest recent intake of others' operations, here or as the peer published it; a peer it timed, its own acknowledgements")
    func leadCountsIntakeForPeersNotTimed() {
        let k = Self.coordinator()
        let plain = Self.view([Self.record(.paused)], current: Self.film, participants: [Self.player(2, .ready)], reachable: [Self.bob])
        let before = k.leadTime(for: Self.film, view: plain, now: Self.t0)
        var delays = AckDelays()
        delays.recordIntake(.milliseconds(50), at: Self.t0)
        let view = { (d: AckDelays) in
            GroupView(me: plain.me, state: plain.state, participants: plain.participants, reachable: plain.reachable, timelines: plain.timelines, ackDelays: d)
        }
        #expect(k.leadTime(for: Self.film, view: view(delays), now: Self.t0) - before == .milliseconds(50), "bob never acknowledged this node")
        #expect(k.leadTime(for: Self.film, view: view(delays), now: Self.t0 + .seconds(601)) == before, "an intake 10 minutes old no longer counts")
        delays.recordPublished(.milliseconds(80), from: Self.bob, at: Self.t0)
        #expect(k.leadTime(for: Self.film, view: view(delays), now: Self.t0) - before == .milliseconds(80), "bob said operations take 80 ms to reach it")
        delays.record(.milliseconds(4), from: Self.bob, at: Self.t0)
        #expect(k.leadTime(for: Self.film, view: view(delays), now: Self.t0) - before == .milliseconds(4), "bob's own acknowledgements, once timed")
    }

    @Test("a player's new start latency is published (once, clamped) and anchors the next command with it; an unknown player is refused")
    func startLatencyChangesAtRunTime() {
        var k = Self.coordinator()
        _ = k.onPlayerLoad(id: 1, item: Self.film, metadata: ItemMetadata(), solo: false, view: Self.view(), now: Self.t0)
        func published(_ d: [Coordinator.Directive]) -> [PlayerStatus]? {
            d.lazy.compactMap { if case .publish(let s) = $0 { s } else { nil } }.first
        }
        func lead(_ statuses: [PlayerStatus]) -> TimeSpan {
            let mine = ParticipantRecord(peer: Self.me, incarnation: 1, version: 2, players: statuses)
            return k.leadTime(for: Self.film, view: Self.view([Self.record(.paused)], current: Self.film, participants: [mine]), now: Self.t0)
        }
        let before = lead(k.players.values.map(\.status))
        let down = k.onPlayerStartLatency(id: 1, .milliseconds(5))
        #expect(down.first == .reply(.done))
        let statuses = published(down)
        #expect(statuses?.first?.startLatency == .milliseconds(5))
        // 20 ms declared at hello, 5 ms now: the lead is 15 ms shorter.
        #expect(before - lead(statuses ?? []) == .milliseconds(15))
        // The same value again changes nothing: no publication.
        #expect(k.onPlayerStartLatency(id: 1, .milliseconds(5)) == [.reply(.done)])
        #expect(published(k.onPlayerStartLatency(id: 1, .seconds(3600)))?.first?.startLatency == .nanoseconds(Limits.latencyNs.upperBound))
        #expect(k.onPlayerStartLatency(id: 9, .milliseconds(5)) == [.reply(.refused(.unknownPlayer))])
    }

    @Test("a waiting timeline this node issued starts when its participants are ready, and after the timeout without them")
    func startWaiting() {
        var k = Self.coordinator { $0.waitTimeout = .seconds(8) }
        let ready = Self.view([Self.record(.waiting)], participants: [Self.player(2, .ready)], reachable: [Self.bob])
        let d = Self.proposals(k.onGroupChanged(view: ready, now: Self.t0))
        guard let p = d.first, p.command == .start, p.reason == .ready else { Issue.record("expected a start (ready), got \(d)"); return }
        #expect(p.result?.phase == .playing)
        let stuck = Self.view([Self.record(.waiting)], participants: [Self.player(2, .loading)], reachable: [Self.bob])
        #expect(Self.proposals(k.onGroupChanged(view: stuck, now: Self.t0 + .seconds(7))).isEmpty)
        #expect(k.nextDeadline(view: stuck, now: Self.t0) == Self.t0 + .seconds(8))
        guard let p = Self.proposals(k.onGroupChanged(view: stuck, now: Self.t0 + .seconds(8))).first, p.command == .start, p.reason == .timeout else {
            Issue.record("expected a start (timeout)")
            return
        }
    }

    @Test("another peer's waiting timeline is left to its origin while the origin is reachable, and taken over by the smallest id when it is gone")
    func responsibility() {
        let k = Self.coordinator()
        let other = Self.record(.waiting, origin: Self.bob)
        #expect(!k.isResponsibleForStart(other, view: Self.view([other], reachable: [Self.bob])))
        #expect(k.isResponsibleForStart(other, view: Self.view([other], reachable: [])))
        #expect(!k.isResponsibleForStart(other, view: Self.view([other], participants: [Self.player(2, .ready, peer: PeerID(high: 0, low: 0))], reachable: [PeerID(high: 0, low: 0)])))
    }

    @Test("a player that is not ready while the group plays is put in stall recovery, and back when ready")
    func stallRecovery() {
        var k = Self.coordinator()
        let playing = Self.view([Self.record(.playing)], current: Self.film)
        _ = k.onPlayerLoad(id: 1, item: Self.film, metadata: ItemMetadata(), solo: false, view: playing, now: Self.t0)
        let d = k.onGroupChanged(view: playing, now: Self.t0)
        #expect(d.contains(.tell(1, .suspension(began: true, id: 1, reason: .stallRecovery, imposed: true))))
        _ = k.onPlayerReadiness(id: 1, .ready)
        #expect(k.onGroupChanged(view: playing, now: Self.t0).contains(.tell(1, .suspension(began: false, id: 1, reason: .stallRecovery, imposed: true))))
    }

    static func toldTimelines(_ d: [Coordinator.Directive]) -> [LocalTime] {
        d.compactMap { if case .tell(_, .timeline(_, _, _, _, let at, _)) = $0 { at } else { nil } }
    }

    @Test("during the agent's stall recovery a player is out of group playback and told no timeline; back, it joins a start latency and the delivery notice ahead")
    func stallRecoveryLeavesGroupPlayback() {
        var k = Self.coordinator()
        let playing = Self.view([Self.record(.playing)], current: Self.film)
        _ = k.onPlayerLoad(id: 1, item: Self.film, metadata: ItemMetadata(), solo: false, view: playing, now: Self.t0)
        _ = k.onPlayerReadiness(id: 1, .ready)
        #expect(Self.toldTimelines(k.onGroupChanged(view: playing, now: Self.t0)).count == 1)
        _ = k.onPlayerReadiness(id: 1, .buffering)
        let stalled = k.onGroupChanged(view: playing, now: Self.t0 + .milliseconds(100))
        #expect(stalled.contains(.tell(1, .groupPlayback(active: false, reason: .suspended([.stallRecovery])))))
        #expect(Self.toldTimelines(stalled).isEmpty)
        // The group seeks meanwhile: nothing for the stalled player.
        var sought = Self.record(.playing, at: 10_200_000_000)
        sought.stamp = Stamp(time: 6, origin: Self.me, incarnation: 1, seq: 6)
        let moved = Self.view([sought], current: Self.film)
        #expect(Self.toldTimelines(k.onGroupChanged(view: moved, now: Self.t0 + .milliseconds(150))).isEmpty)
        _ = k.onPlayerReadiness(id: 1, .ready)
        let now = Self.t0 + .milliseconds(300)
        let back = k.onGroupChanged(view: moved, now: now)
        #expect(back.contains(.tell(1, .groupPlayback(active: true, reason: .following(Self.film)))))
        let at = Self.toldTimelines(back)
        #expect(at.count == 1 && at.allSatisfy { $0 >= now + .milliseconds(20) + Coordinator.Configuration().playerNotice })
    }

    /// A ready player whose group has played since 9 s (rate 1, from 0), loaded at `t0`: it is
    /// told the timeline late. Returns the coordinator, the view and what it was told at `t0`.
    static func lateJoiner() -> (Coordinator, GroupView, [Coordinator.Directive]) {
        var k = coordinator()
        let playing = view([record(.playing, at: 9_000_000_000)], current: film)
        _ = k.onPlayerLoad(id: 1, item: film, metadata: ItemMetadata(), solo: false, view: playing, now: t0)
        _ = k.onPlayerReadiness(id: 1, .ready)
        let told = k.onGroupChanged(view: playing, now: t0)
        return (k, playing, told)
    }

    @Test("a timeline whose anchor is past is told at least the start latency plus the delivery notice ahead")
    func lateTimelineNotice() {
        let (_, _, told) = Self.lateJoiner()
        #expect(Self.toldTimelines(told) == [Self.t0 + .milliseconds(20) + Coordinator.Configuration().playerNotice])
    }

    @Test("a player joining a timeline late is not corrected for reports from before its join instant; after it, it is")
    func noCorrectionBeforeTheJoin() {
        var (k, playing, told) = Self.lateJoiner()
        let join = Self.t0 + .milliseconds(20) + Coordinator.Configuration().playerNotice
        #expect(Self.toldTimelines(told) == [join])
        // Still paused at 0 before the join: a second behind the timeline, and not late.
        let before = join - .milliseconds(1)
        #expect(k.onPlayerPosition(id: 1, position: .zero, at: before, view: playing, now: before) == [])
        // After the join, where the timeline is: in step.
        let after = join + .milliseconds(100)
        #expect(k.onPlayerPosition(id: 1, position: MediaPosition(clamping: after.ns - 9_000_000_000), at: after, view: playing, now: after) == [])
        // After the join, 1 ms behind: corrected.
        let later = join + .milliseconds(200)
        let behind = k.onPlayerPosition(id: 1, position: MediaPosition(clamping: later.ns - 9_000_000_000 - 1_000_000), at: later, view: playing, now: later)
        #expect(behind.contains { if case .tell(1, .correction) = $0 { true } else { false } })
    }

    @Test("a suspension for a reason that makes the group wait holds a playing group")
    func waitingReasonHolds() {
        var k = Self.coordinator { $0.waitingReasons = [.interstitial] }
        let playing = Self.view([Self.record(.playing)], current: Self.film)
        _ = k.onPlayerLoad(id: 1, item: Self.film, metadata: ItemMetadata(), solo: false, view: playing, now: Self.t0)
        _ = k.onPlayerReadiness(id: 1, .ready)
        #expect(k.onPlayerBeginSuspension(id: 1, reason: .interstitial).first == .reply(.suspensionBegan(1)))
        guard let p = Self.proposals(k.onGroupChanged(view: playing, now: Self.t0)).first, p.command == .hold(.interstitial), p.reason == .waiting(.interstitial) else {
            Issue.record("expected a hold")
            return
        }
        #expect(p.result?.phase == .waiting)
    }

    @Test("a solo or suspended player's intents are its own business")
    func privateIntents() {
        var k = Self.coordinator()
        let view = Self.view([Self.record(.paused)], current: Self.film)
        _ = k.onPlayerLoad(id: 1, item: Self.film, metadata: ItemMetadata(), solo: true, view: view, now: Self.t0)
        #expect(k.onPlayerIntent(id: 1, .pause, view: view, now: Self.t0) == [.reply(.done)])
    }

    @Test("ending a suspension proposing a time moves the group there, marked as the end of a suspension")
    func endSuspensionSeeks() {
        var k = Self.coordinator()
        let view = Self.view([Self.record(.paused)], current: Self.film)
        _ = k.onPlayerLoad(id: 1, item: Self.film, metadata: ItemMetadata(), solo: false, view: view, now: Self.t0)
        _ = k.onPlayerBeginSuspension(id: 1, reason: .userChangingTime)
        let d = k.onPlayerEndSuspension(id: 1, suspension: nil, proposedPosition: MediaPosition(clamping: 30_000_000_000), view: view, now: Self.t0)
        #expect(d.first == .reply(.done))
        guard let p = Self.proposals(d).first, p.command == .seek(MediaPosition(clamping: 30_000_000_000)), p.reason == .suspensionEnded else {
            Issue.record("expected a seek")
            return
        }
        #expect(p.result?.position.ns == 30_000_000_000)
        #expect(k.onPlayerEndSuspension(id: 1, suspension: nil, proposedPosition: nil, view: view, now: Self.t0) == [.reply(.refused(.notSuspended))])
    }

    @Test("crossing commands are told to every player in group playback, not to solo ones or those with no item")
    func concurrentTold() {
        var k = Self.coordinator()
        _ = k.onPlayerHello(id: 2, info: .init(name: "solo"))
        _ = k.onPlayerHello(id: 3, info: .init(name: "idle"))
        let view = Self.view([Self.record(.paused)], current: Self.film)
        _ = k.onPlayerLoad(id: 1, item: Self.film, metadata: ItemMetadata(), solo: false, view: view, now: Self.t0)
        _ = k.onPlayerLoad(id: 2, item: Self.film, metadata: ItemMetadata(), solo: true, view: view, now: Self.t0)
        let stamp = Stamp(time: 1, origin: Self.bob, incarnation: 1, seq: 1)
        let report = ConcurrentCommands(command: .init(stamp: stamp, item: Self.film, action: .pause), with: [.init(stamp: Stamp(time: 1, origin: Self.me, incarnation: 1, seq: 2), item: Self.film, action: .seek)])
        #expect(k.onConcurrentCommands(report) == [.tell(1, .concurrent(report))])
    }

    @Test("the participants told are worked out again only when the view's presence version changes; a view without one is never kept")
    func participantsKeptByPresenceVersion() {
        func with(_ participants: [ParticipantRecord], version: UInt64?) -> GroupView {
            let v = Self.view([Self.record(.paused)], current: Self.film, participants: participants, reachable: [Self.bob])
            return GroupView(
                me: v.me, state: v.state, participants: v.participants, reachable: v.reachable, timelines: v.timelines,
                presenceVersion: version.map { .init(participants: $0, reachable: 1) })
        }
        func told(_ d: [Coordinator.Directive]) -> [[ParticipantInfo]] {
            d.compactMap { if case .tell(1, .participants(_, let list)) = $0 { list } else { nil } }
        }
        var k = Self.coordinator()
        _ = k.onPlayerLoad(id: 1, item: Self.film, metadata: ItemMetadata(), solo: false, view: with([], version: 1), now: Self.t0)
        #expect(told(k.onGroupChanged(view: with([Self.player(7, .ready)], version: 2), now: Self.t0)).map { $0.map(\.playerID) } == [[7]])
        // The same version: the records are the ones already read (a node never shows new ones under it).
        #expect(told(k.onGroupChanged(view: with([Self.player(8, .ready)], version: 2), now: Self.t0)).isEmpty, "kept")
        #expect(told(k.onGroupChanged(view: with([Self.player(8, .ready)], version: 3), now: Self.t0)).map { $0.map(\.playerID) } == [[8]])
        #expect(told(k.onGroupChanged(view: with([Self.player(9, .ready)], version: nil), now: Self.t0)).map { $0.map(\.playerID) } == [[9]], "no version: read anew")
    }

    @Test("requests for a player that never said hello are refused")
    func unknownPlayer() {
        var k = Coordinator(me: Self.me)
        #expect(k.onPlayerReadiness(id: 9, .ready) == [.reply(.refused(.unknownPlayer))])
        #expect(k.onPlayerIntent(id: 9, .pause, view: Self.view(), now: Self.t0) == [.reply(.refused(.unknownPlayer))])
    }

    @Test("a seek past the item's duration is refused, naming both; one to the very end is taken")
    func seekPastEnd() {
        let k = Self.coordinator()
        var state = GroupState()
        let load = GroupOperation(
            stamp: Stamp(time: 1, origin: Self.me, incarnation: 1, seq: 1), heads: [], item: Self.film, command: .load(ItemMetadata(duration: .seconds(60))),
            basis: Self.me, at: PeerTime(ns: 1), originAt: PeerTime(ns: 1))
        state.apply(load)
        let view = GroupView(me: Self.me, state: state, participants: [:], reachable: [], timelines: LocalTimelines(me: Self.me, clocks: PeerClocks(me: Self.me)))
        let past = MediaPosition(clamping: 61_000_000_000)
        #expect(k.onCommand(.seek(position: past), reason: nil, view: view, now: Self.t0) == [.reply(.refused(.positionPastEnd(past, duration: .seconds(60))))])
        #expect(k.onCommand(.seek(position: MediaPosition(clamping: 60_000_000_000)), reason: nil, view: view, now: Self.t0).first == .reply(.done))
    }

    @Test("a player's intent names the player, so that every peer can say whose user caused the change; a command from the CLI names none")
    func intentNamesThePlayer() {
        var k = Self.coordinator()
        let view = Self.view([Self.record(.paused)], current: Self.film)
        _ = k.onPlayerLoad(id: 1, item: Self.film, metadata: ItemMetadata(), solo: false, view: view, now: Self.t0)
        #expect(Self.proposals(k.onPlayerIntent(id: 1, .pause, view: view, now: Self.t0)).first?.by == "tv")
        #expect(Self.proposals(k.onPlayerIntent(id: 1, .seek(position: .zero), view: view, now: Self.t0)).first?.by == "tv")
        #expect(Self.proposals(k.onCommand(.seek(position: .zero), reason: nil, view: view, now: Self.t0)).first?.by == nil)
        var state = GroupState()
        state.apply(GroupOperation(stamp: Stamp(time: 1, origin: Self.me, incarnation: 1, seq: 1), heads: [], item: Self.film, command: .load(ItemMetadata()), by: "tv", basis: Self.me, at: PeerTime(ns: 1), originAt: PeerTime(ns: 1)))
        #expect(state.items[Self.film]?.by == "tv" && state.current?.by == "tv")
    }

    @Test("a command on an item the group does not have is refused")
    func noItem() {
        let k = Self.coordinator()
        #expect(k.onCommand(.pause, reason: nil, view: Self.view(), now: Self.t0) == [.reply(.refused(.noItem))])
    }
}
