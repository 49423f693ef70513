import LockstepSimKit
import Testing

@testable import LockstepCore

/// SharePlay's coordination semantics, on simulated hosts with one player each.
@Suite("Coordination", .tags(.simulation))
struct CoordinationTests {
    static let film = ItemID("file:///films/night.mkv")!
    static let other = ItemID("file:///films/day.mkv")!
    let s = Nanos.second, ms = Nanos.millisecond

    /// `hosts` hosts, clocks settled, player 1 on each (start latency 20 ms).
    func group(_ hosts: Int, seed: UInt64 = 1, configure: (inout Node.Configuration) -> Void = { _ in }) -> GroupSimulation {
        var sim = GroupSimulation(hosts: hosts, seed: seed, configure: configure)
        sim.run(for: 3 * s)
        for i in 0..<hosts {
            sim.execute(i, sim.hosts[i].node.onPlayerHello(id: 1, info: .init(name: "p\(i)", canChangeRate: true, exactSeek: true, startLatency: .milliseconds(20)), now: sim.local(i)))
        }
        sim.run(for: 50 * ms)
        return sim
    }

    /// Instructions host `i`'s player received after true time `since`.
    func told(_ sim: GroupSimulation, _ i: Int, since: Int64 = 0) -> [(time: Int64, instruction: PlayerInstruction)] {
        sim.hosts[i].log.compactMap { entry in
            guard entry.time >= since, case .tellPlayer(1, let instruction) = entry.directive else { return nil }
            return (entry.time, instruction)
        }
    }

    /// Where `reference` says the media is at true time `t`: the timeline advances on its
    /// origin's clock.
    func project(_ sim: GroupSimulation, _ reference: (phase: TimelinePhase, position: Int64, rate: Double, trueAt: Int64, record: ItemRecord), to t: Int64) -> Int64 {
        // The timeline advances on the clock it is written on (the group's basis).
        let owner = sim.hosts.firstIndex { $0.node.identity.peer == reference.record.clock }!
        let clock = sim.hosts[owner].clock
        return reference.position + Int64(Double((clock.device(fromHost: t) - clock.device(fromHost: reference.trueAt)).ns) * reference.record.timeline.rate)
    }

    func lastTimeline(_ sim: GroupSimulation, _ i: Int) -> (phase: TimelinePhase, position: Int64, rate: Double, trueAt: Int64, record: ItemRecord)? {
        for (_, instruction) in told(sim, i).reversed() {
            if case .timeline(_, let phase, let position, let rate, let at, let record) = instruction {
                return (phase, position.ns, rate, sim.trueTime(i, local: at), record)
            }
        }
        return nil
    }

    /// The outcome a request's directives reply with.
    func outcome(_ directives: [NodeDirective]) -> RequestOutcome? {
        directives.compactMap { if case .reply(let o) = $0 { o } else { nil } }.first
    }

    func load(_ sim: inout GroupSimulation, _ i: Int, _ item: ItemID = film, solo: Bool = false) -> LoadOutcome? {
        let d = sim.hosts[i].node.onPlayerLoad(id: 1, item: item, metadata: .init(title: "Night"), solo: solo, now: sim.local(i))
        sim.execute(i, d)
        guard case .loaded(let o, _)? = outcome(d) else { return nil }
        return o
    }

    func ready(_ sim: inout GroupSimulation, _ i: Int, _ readiness: PlayerStatus.Readiness = .ready) {
        sim.execute(i, sim.hosts[i].node.onPlayerReadiness(id: 1, readiness, now: sim.local(i)))
    }

    func intent(_ sim: inout GroupSimulation, _ i: Int, _ command: GroupCommand) {
        sim.execute(i, sim.hosts[i].node.onPlayerIntent(id: 1, command, now: sim.local(i)))
    }

    /// Suspends host `i`'s player; returns the suspension's id.
    func suspend(_ sim: inout GroupSimulation, _ i: Int, _ reason: SuspensionReason) throws -> UInt32 {
        let d = sim.hosts[i].node.onPlayerBeginSuspension(id: 1, reason: reason, now: sim.local(i))
        sim.execute(i, d)
        guard case .suspensionBegan(let sid)? = outcome(d) else { throw SuspensionRefused() }
        return sid
    }

    struct SuspensionRefused: Error {}

    func resume(_ sim: inout GroupSimulation, _ i: Int, _ sid: UInt32, at position: Int64? = nil) {
        let p = position.map { MediaPosition(clamping: $0) }
        sim.execute(i, sim.hosts[i].node.onPlayerEndSuspension(id: 1, suspension: sid, proposedPosition: p, now: sim.local(i)))
    }

    @Test("the group waits until every participant is ready, then all start at the same instant")
    func waitsForReadiness() throws {
        var sim = group(4)
        #expect(load(&sim, 0) == .proposed)
        sim.run(for: 100 * ms)
        for i in 1..<4 { #expect(load(&sim, i) == .adopted) }
        sim.run(for: 100 * ms)
        for i in 0..<3 { ready(&sim, i) }
        sim.run(for: 100 * ms)
        intent(&sim, 1, .play(rate: nil))
        sim.run(for: 200 * ms)
        // Host 3 is still loading: everyone is told to wait, for p3.
        for i in 0..<4 {
            guard case .wait(_, _, _, let waitingFor, _)? = told(sim, i).last(where: { if case .wait = $0.instruction { return true } else { return false } })?.instruction else {
                Issue.record("host \(i) was not told to wait")
                continue
            }
            #expect(waitingFor.map(\.name) == ["p3"])
        }
        #expect(sim.hosts[0].node.group.state.items[Self.film]?.timeline.phase == .waiting)
        let readyAt = sim.now
        ready(&sim, 3)
        sim.run(for: 300 * ms)
        let starts = try (0..<4).map { i in try #require(lastTimeline(sim, i)) }
        for s in starts { #expect(s.phase == .playing && s.record.action == .start && s.record.reason == .ready) }
        let instants = starts.map(\.trueAt)
        #expect(instants.max()! - instants.min()! < 5 * Nanos.microsecond, "start instants within the clocks' error")
        #expect(instants[0] - readyAt < 100 * ms, "started within 100 ms of the last participant being ready")
    }

    @Test("after the wait times out the group starts; the laggard is put in stall recovery and rejoins where the group is")
    func waitTimeout() throws {
        var sim = group(3) { $0.coordinator.waitTimeout = .seconds(2) }
        _ = load(&sim, 0)
        sim.run(for: 100 * ms)
        _ = load(&sim, 1)
        _ = load(&sim, 2)
        ready(&sim, 0)
        ready(&sim, 1)
        sim.run(for: 100 * ms)
        intent(&sim, 0, .play(rate: nil))
        sim.run(for: 2500 * ms)
        let started = try #require(lastTimeline(sim, 0))
        #expect(started.phase == .playing && started.record.reason == .timeout)
        #expect(told(sim, 2).contains { if case .suspension(true, _, .stallRecovery, true) = $0.instruction { return true } else { return false } })
        // The laggard gets ready 3 s later: its suspension ends and it joins at the group's position.
        sim.run(for: 3 * s)
        ready(&sim, 2)
        sim.run(for: 100 * ms)
        #expect(told(sim, 2).contains { if case .suspension(false, _, .stallRecovery, true) = $0.instruction { return true } else { return false } })
        let joined = try #require(lastTimeline(sim, 2))
        let reference = try #require(lastTimeline(sim, 0))
        // Both describe the same timeline: positions agree at the joiner's instant.
        #expect(abs(joined.position - project(sim, reference, to: joined.trueAt)) < 50 * Nanos.microsecond)
        #expect(joined.position > 3 * s)
    }

    @Test("a suspended participant neither affects the group nor is affected; it rejoins the timeline when its suspension ends")
    func suspension() throws {
        var sim = group(3)
        _ = load(&sim, 0)
        sim.run(for: 100 * ms)
        for i in 1..<3 { _ = load(&sim, i) }
        for i in 0..<3 { ready(&sim, i) }
        sim.run(for: 100 * ms)
        intent(&sim, 0, .play(rate: nil))
        sim.run(for: 1 * s)
        let sid = try suspend(&sim, 1, .interruption)
        sim.run(for: 100 * ms)
        let stamp = sim.hosts[0].node.group.state.items[Self.film]?.stamp
        // Its pause goes nowhere; the group's seek does not reach it.
        intent(&sim, 1, .pause)
        sim.run(for: 100 * ms)
        #expect(sim.hosts[0].node.group.state.items[Self.film]?.stamp == stamp)
        let before = told(sim, 1).count
        intent(&sim, 2, .seek(position: MediaPosition(clamping: 100 * s)))
        sim.run(for: 200 * ms)
        #expect(!told(sim, 1).dropFirst(before).contains { if case .timeline = $0.instruction { return true } else { return false } })
        // The others see why it is out.
        let list = sim.hosts[0].node.coordinator.participants(on: Self.film, view: sim.hosts[0].node.view)
        #expect(list.first { $0.name == "p1" }?.suspensions == [.interruption])
        // Ending the suspension: told the group's current timeline.
        resume(&sim, 1, sid)
        sim.run(for: 100 * ms)
        let back = try #require(lastTimeline(sim, 1))
        #expect(back.phase == .playing && back.record.action == .seek)
    }

    @Test("ending a suspension with a proposed time moves the whole group there (a scrub)")
    func proposedTime() throws {
        var sim = group(3)
        _ = load(&sim, 0)
        sim.run(for: 100 * ms)
        for i in 1..<3 { _ = load(&sim, i) }
        for i in 0..<3 { ready(&sim, i) }
        sim.run(for: 100 * ms)
        intent(&sim, 0, .play(rate: nil))
        sim.run(for: 1 * s)
        let sid = try suspend(&sim, 2, .userChangingTime)
        sim.run(for: 500 * ms)
        resume(&sim, 2, sid, at: 30 * s)
        sim.run(for: 200 * ms)
        for i in 0..<3 {
            let t = try #require(lastTimeline(sim, i))
            #expect(t.record.reason == .suspensionEnded && t.record.timeline.position.ns == 30 * s && t.record.stamp.origin == sim.peer(2))
        }
    }

    @Test("a suspension reason configured to make others wait holds the group until it ends")
    func waitingReason() throws {
        var sim = group(3) { $0.coordinator.waitingReasons = [.interstitial] }
        _ = load(&sim, 0)
        sim.run(for: 100 * ms)
        for i in 1..<3 { _ = load(&sim, i) }
        for i in 0..<3 { ready(&sim, i) }
        sim.run(for: 100 * ms)
        intent(&sim, 0, .play(rate: nil))
        sim.run(for: 1 * s)
        let sid = try suspend(&sim, 1, .interstitial)
        sim.run(for: 200 * ms)
        #expect(sim.hosts[0].node.group.state.items[Self.film]?.timeline.phase == .waiting)
        #expect(told(sim, 0).contains { if case .wait(_, _, _, let w, _) = $0.instruction { return w.map(\.why) == [.suspended(.interstitial)] } else { return false } })
        resume(&sim, 1, sid)
        sim.run(for: 300 * ms)
        #expect(sim.hosts[0].node.group.state.items[Self.film]?.timeline.phase == .playing)
        #expect(try #require(lastTimeline(sim, 2)).record.reason == .ready)
    }

    @Test("commands apply only between players of the same item; a player on another item is not disturbed")
    func itemIdentity() throws {
        var sim = group(3)
        _ = load(&sim, 0)
        sim.run(for: 100 * ms)
        _ = load(&sim, 1)
        for i in 0..<2 { ready(&sim, i) }
        sim.run(for: 100 * ms)
        intent(&sim, 0, .play(rate: nil))
        sim.run(for: 500 * ms)
        // Host 2's player loads another item, which becomes the group's proposal.
        #expect(load(&sim, 2, Self.other) == .proposed)
        ready(&sim, 2)
        sim.run(for: 200 * ms)
        let p0 = try #require(lastTimeline(sim, 0))
        #expect(p0.record.item == Self.film && p0.phase == .playing, "host 0 keeps playing the film")
        #expect(told(sim, 0).contains { if case .itemProposed(let c) = $0.instruction { return c.item == Self.other } else { return false } })
        // A pause on the other item does not reach the film's players.
        intent(&sim, 2, .pause)
        sim.run(for: 200 * ms)
        #expect(try #require(lastTimeline(sim, 0)).phase == .playing)
    }

    @Test("a player that loads an item the group plays adopts the group's timeline where it is")
    func lateJoiner() throws {
        var sim = group(3)
        _ = load(&sim, 0)
        _ = load(&sim, 1)
        ready(&sim, 0)
        ready(&sim, 1)
        sim.run(for: 100 * ms)
        intent(&sim, 1, .play(rate: 1.5))
        sim.run(for: 10 * s)
        #expect(load(&sim, 2) == .adopted)
        ready(&sim, 2)
        sim.run(for: 200 * ms)
        let joined = try #require(lastTimeline(sim, 2))
        #expect(joined.phase == .playing)
        #expect(abs(joined.rate - 1.5) < 0.001)
        let reference = try #require(lastTimeline(sim, 0))
        #expect(abs(joined.position - project(sim, reference, to: joined.trueAt)) < 50 * Nanos.microsecond)
        #expect(joined.position > 14 * s)
    }

    @Test("play immediately starts without waiting for players that are not ready")
    func playImmediately() throws {
        var sim = group(2)
        _ = load(&sim, 0)
        sim.run(for: 100 * ms)
        _ = load(&sim, 1)
        ready(&sim, 0)
        sim.run(for: 100 * ms)
        sim.execute(0, sim.hosts[0].node.onPlayerPlayImmediately(id: 1, rate: nil, now: sim.local(0)))
        sim.run(for: 200 * ms)
        let t = try #require(lastTimeline(sim, 0))
        #expect(t.phase == .playing && t.record.reason == .playImmediately)
    }

    @Test("output latency is folded in: a player with 50 ms more latency is told a position 50 ms further on")
    func outputLatency() throws {
        var sim = GroupSimulation(hosts: 2, seed: 4)
        sim.run(for: 3 * s)
        sim.execute(0, sim.hosts[0].node.onPlayerHello(id: 1, info: .init(name: "tv", startLatency: .milliseconds(20)), now: sim.local(0)))
        sim.execute(1, sim.hosts[1].node.onPlayerHello(id: 1, info: .init(name: "bluetooth", outputLatency: .milliseconds(50), startLatency: .milliseconds(20)), now: sim.local(1)))
        _ = load(&sim, 0)
        sim.run(for: 100 * ms)
        _ = load(&sim, 1)
        ready(&sim, 0)
        ready(&sim, 1)
        sim.run(for: 100 * ms)
        intent(&sim, 0, .play(rate: nil))
        sim.run(for: 300 * ms)
        let tv = try #require(lastTimeline(sim, 0)), bt = try #require(lastTimeline(sim, 1))
        let tvAtBT = tv.position + (bt.trueAt - tv.trueAt)
        #expect(abs(bt.position - tvAtBT - 50 * ms) < 10 * Nanos.microsecond)
    }

    @Test("a player drifting off a timeline set by another peer gets a rate correction, then back to the group's rate")
    func driftCorrected() throws {
        var sim = group(2)
        _ = load(&sim, 0)
        sim.run(for: 100 * ms)
        _ = load(&sim, 1)
        ready(&sim, 0)
        ready(&sim, 1)
        sim.run(for: 100 * ms)
        intent(&sim, 0, .play(rate: nil))
        sim.run(for: 2 * s)
        // Host 1's player is 3 ms ahead of where the group timeline (set by host 0) is.
        let start = try #require(lastTimeline(sim, 1))
        let now = sim.now
        // Reports describe a moment just past (here 5 ms ago), as real ones do. The first error
        // after a timeline waits for the next report to confirm it.
        for _ in 0..<2 {
            let reportedAt = sim.local(1) - .milliseconds(5)
            let truth = start.position + Int64(Double((reportedAt - sim.hosts[1].clock.device(fromHost: start.trueAt)).ns) * start.rate)
            sim.execute(1, sim.hosts[1].node.onPlayerPosition(id: 1, position: MediaPosition(clamping: truth + 3 * ms), at: reportedAt, now: sim.local(1)))
            sim.run(for: 100 * ms)
        }
        let corrections = told(sim, 1, since: now).compactMap { entry -> SyncPolicy.Correction? in
            if case .correction(let c) = entry.instruction { return c }
            return nil
        }
        guard case .rate(let rate, _, let error)? = corrections.first else {
            Issue.record("expected a rate correction, got \(corrections)")
            return
        }
        #expect(rate < start.rate)
        #expect(abs(error.ns - 3 * ms) < 20 * Nanos.microsecond)
    }

    @Test("a player that goes to buffering while the group plays is put in stall recovery; the others play on")
    func stallRecovery() throws {
        var sim = group(2)
        _ = load(&sim, 0)
        sim.run(for: 100 * ms)
        _ = load(&sim, 1)
        ready(&sim, 0)
        ready(&sim, 1)
        sim.run(for: 100 * ms)
        intent(&sim, 0, .play(rate: nil))
        sim.run(for: 1 * s)
        ready(&sim, 1, .buffering)
        sim.run(for: 100 * ms)
        #expect(told(sim, 1).contains { if case .suspension(true, _, .stallRecovery, true) = $0.instruction { return true } else { return false } })
        #expect(sim.hosts[0].node.group.state.items[Self.film]?.timeline.phase == .playing)
        ready(&sim, 1)
        sim.run(for: 100 * ms)
        #expect(told(sim, 1).contains { if case .suspension(false, _, .stallRecovery, true) = $0.instruction { return true } else { return false } })
    }
}

@Suite("Sync policy")
struct SyncPolicyTests {
    let ms = Nanos.millisecond
    let playing = Timeline<LocalTime>(phase: .playing, anchorTime: LocalTime(ns: 0), position: .zero, rate: 1)

    /// A report at `at` ns of `position` ns, evaluated at `now` (default: `at`).
    func report(
        _ policy: inout SyncPolicy, position: Int64, at: Int64, now: Int64? = nil, outputLatency: Int64 = 0, canChangeRate: Bool = true
    ) -> SyncPolicy.Correction? {
        policy.onReport(
            position: MediaPosition(clamping: position), reportedAt: LocalTime(ns: at), timeline: playing, outputLatency: .nanoseconds(outputLatency),
            canChangeRate: canChangeRate, lead: .milliseconds(20), now: LocalTime(ns: now ?? at))
    }

    @Test("an error below the start threshold is left alone; above it a rate-capable player gets a rate nudge that closes the gap")
    func nudge() throws {
        var policy = SyncPolicy()
        #expect(report(&policy, position: 1_000_000 + 150_000, at: 1_000_000) == nil)
        let c = report(&policy, position: 2_000_000 + 10 * ms, at: 2_000_000)
        guard case .rate(let rate, let until, let error)? = c else {
            Issue.record("expected a rate correction, got \(String(describing: c))")
            return
        }
        #expect(error.ns == 10 * ms)
        #expect(rate < 1 && rate >= 0.98)
        // Over the correction the player loses exactly the error.
        #expect(abs((1 - rate) * Double(until.ns - 2_000_000) - Double(10 * ms)) < 1_000)
    }

    @Test("a large error is fixed by an exact seek to where the timeline will be")
    func seek() {
        var policy = SyncPolicy()
        let c = report(&policy, position: 700 * ms, at: 1000 * ms)
        #expect(c == .seek(position: MediaPosition(clamping: 1020 * ms), at: LocalTime(ns: 1020 * ms), error: .milliseconds(-300)))
        // The next reports before the seek landed are ignored.
        #expect(report(&policy, position: 710 * ms, at: 1010 * ms) == nil)
    }

    @Test("players without rate control get seeks only, and only above their own threshold")
    func seekOnly() {
        var policy = SyncPolicy()
        #expect(report(&policy, position: 1000 * ms + 20 * ms, at: 1000 * ms, canChangeRate: false) == nil)
        guard case .seek? = report(&policy, position: 2000 * ms + 60 * ms, at: 2000 * ms, canChangeRate: false) else {
            Issue.record("expected a seek")
            return
        }
    }

    @Test("hysteresis: a correction ends once the error is below the settle threshold, and a small error does not restart it")
    func hysteresis() {
        var policy = SyncPolicy()
        _ = report(&policy, position: 5 * ms, at: 0)
        // Within the hold time nothing new is planned.
        #expect(report(&policy, position: 100 * ms + 4 * ms, at: 100 * ms) == nil)
        // Settled: back to the timeline's rate.
        #expect(report(&policy, position: 600 * ms + 40_000, at: 600 * ms) == .rate(1, until: LocalTime(ns: 600 * ms), error: .microseconds(40)))
        // 150 µs is below the start threshold once in sync.
        #expect(report(&policy, position: 700 * ms + 150_000, at: 700 * ms) == nil)
    }

    @Test("the output latency is part of the target: a player with 40 ms latency must be 40 ms ahead")
    func latency() {
        var policy = SyncPolicy()
        #expect(report(&policy, position: 1040 * ms, at: 1000 * ms, outputLatency: 40 * ms) == nil)
        #expect(policy.lastError == .zero)
    }

    @Test("after a new timeline the first error waits for the next report: gone by then, nothing is corrected; still there, it is")
    func firstErrorAfterANewTimelineIsConfirmed() {
        var policy = SyncPolicy()
        policy.reset()
        // Taken before the player acted on the timeline: 12 ms behind, then in step.
        #expect(report(&policy, position: 1000 * ms - 12 * ms, at: 1000 * ms) == nil)
        #expect(report(&policy, position: 1100 * ms, at: 1100 * ms) == nil)
        #expect(report(&policy, position: 1200 * ms - 3 * ms, at: 1200 * ms) != nil, "later errors are corrected at once")
        policy.reset()
        #expect(report(&policy, position: 2000 * ms - 3 * ms, at: 2000 * ms) == nil)
        #expect(report(&policy, position: 2100 * ms - 3 * ms, at: 2100 * ms) != nil, "confirmed by the next report")
    }

    @Test("a report of position zero against a timeline anchored at the oldest instant, at the fastest rate, corrects without trapping")
    func extremes() {
        var policy = SyncPolicy()
        let far = Timeline<LocalTime>(phase: .playing, anchorTime: LocalTime(ns: Limits.instantNs.lowerBound), position: .zero, rate: Limits.rate.upperBound)
        let c = policy.onReport(
            position: .zero, reportedAt: LocalTime(ns: Limits.instantNs.upperBound), timeline: far, outputLatency: .nanoseconds(Limits.latencyNs.upperBound),
            canChangeRate: true, lead: .seconds(10), now: LocalTime(ns: Limits.instantNs.upperBound))
        #expect(c != nil)
    }
}
