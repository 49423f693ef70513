import Testing

@testable import LockstepCore

/// SharePlay's coordination semantics, on simulated hosts with one player each.
@Suite("Coordination")
struct CoordinationTests {
    static let film = ItemID("file:///films/night.mkv")!
    static let other = ItemID("file:///films/day.mkv")!
    let s = Nanos.second, ms = Nanos.millisecond

    /// `hosts` hosts, clocks settled, player 1 on each (start latency 20 ms).
    func group(_ hosts: Int, seed: UInt64 = 1, configure: (inout Node.Configuration) -> Void = { _ in }) -> Simulation {
        var sim = Simulation(hosts: hosts, seed: seed, configure: configure)
        sim.run(for: 3 * s)
        for i in 0..<hosts {
            sim.execute(i, sim.hosts[i].node.addPlayer(id: 1, info: .init(name: "p\(i)", canChangeRate: true, exactSeek: true, startLatencyNs: 20 * ms), now: sim.local(i)))
        }
        sim.run(for: 50 * ms)
        return sim
    }

    /// Instructions host `i`'s player received after true time `since`.
    func told(_ sim: Simulation, _ i: Int, since: Int64 = 0) -> [(time: Int64, instruction: PlayerInstruction)] {
        sim.hosts[i].log.compactMap { entry in
            guard entry.time >= since, case .tellPlayer(1, let instruction) = entry.directive else { return nil }
            return (entry.time, instruction)
        }
    }

    /// Where `reference` says the media is at true time `t`: the timeline advances on its
    /// origin's clock.
    func project(_ sim: Simulation, _ reference: (phase: Timeline.Phase, position: Int64, rate: Double, trueAt: Int64, record: ItemRecord), to t: Int64) -> Int64 {
        let origin = sim.hosts.firstIndex { $0.node.identity.peer == reference.record.stamp.origin }!
        let clock = sim.hosts[origin].clock
        return reference.position + Int64(Double(clock.device(fromHost: t) - clock.device(fromHost: reference.trueAt)) * reference.record.timeline.rate)
    }

    func lastTimeline(_ sim: Simulation, _ i: Int) -> (phase: Timeline.Phase, position: Int64, rate: Double, trueAt: Int64, record: ItemRecord)? {
        for (_, instruction) in told(sim, i).reversed() {
            if case .timeline(_, let phase, let position, let rate, let at, let record) = instruction {
                return (phase, position, rate, sim.trueTime(i, local: at), record)
            }
        }
        return nil
    }

    mutating func load(_ sim: inout Simulation, _ i: Int, _ item: ItemID = film, solo: Bool = false) -> LoadOutcome? {
        let (d, r) = sim.hosts[i].node.playerLoad(id: 1, item: item, metadata: .init(title: "Night"), solo: solo, now: sim.local(i))
        sim.execute(i, d)
        return try? r.get()
    }

    func ready(_ sim: inout Simulation, _ i: Int, _ readiness: PlayerStatus.Readiness = .ready) {
        sim.execute(i, sim.hosts[i].node.playerReadiness(id: 1, readiness, now: sim.local(i)))
    }

    func intent(_ sim: inout Simulation, _ i: Int, _ command: GroupCommand) {
        let (d, _) = sim.hosts[i].node.playerIntent(id: 1, command, now: sim.local(i))
        sim.execute(i, d)
    }

    @Test("the group waits until every participant is ready, then all start at the same instant")
    mutating func waitsForReadiness() throws {
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
        #expect(sim.hosts[0].node.replica.state.items[Self.film]?.timeline.phase == .waiting)
        let readyAt = sim.now
        ready(&sim, 3)
        sim.run(for: 300 * ms)
        let starts = try (0..<4).map { i in try #require(lastTimeline(sim, i)) }
        for s in starts { #expect(s.phase == .playing && s.record.action == .start && s.record.reason == "ready") }
        let instants = starts.map(\.trueAt)
        #expect(instants.max()! - instants.min()! < 5 * Nanos.microsecond, "start instants within the clocks' error")
        #expect(instants[0] - readyAt < 100 * ms, "started within 100 ms of the last participant being ready")
    }

    @Test("after the wait times out the group starts; the laggard is put in stall recovery and rejoins where the group is")
    mutating func waitTimeout() throws {
        var sim = group(3) { $0.waitTimeoutNs = 2 * Nanos.second }
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
        #expect(started.phase == .playing && started.record.reason == "timeout")
        #expect(told(sim, 2).contains { if case .suspension(true, _, "stall-recovery", true) = $0.instruction { return true } else { return false } })
        // The laggard gets ready 3 s later: its suspension ends and it joins at the group's position.
        sim.run(for: 3 * s)
        ready(&sim, 2)
        sim.run(for: 100 * ms)
        #expect(told(sim, 2).contains { if case .suspension(false, _, "stall-recovery", true) = $0.instruction { return true } else { return false } })
        let joined = try #require(lastTimeline(sim, 2))
        let reference = try #require(lastTimeline(sim, 0))
        // Both describe the same timeline: positions agree at the joiner's instant.
        #expect(abs(joined.position - project(sim, reference, to: joined.trueAt)) < 50 * Nanos.microsecond)
        #expect(joined.position > 3 * s)
    }

    @Test("a suspended participant neither affects the group nor is affected; it rejoins the timeline when its suspension ends")
    mutating func suspension() throws {
        var sim = group(3)
        _ = load(&sim, 0)
        sim.run(for: 100 * ms)
        for i in 1..<3 { _ = load(&sim, i) }
        for i in 0..<3 { ready(&sim, i) }
        sim.run(for: 100 * ms)
        intent(&sim, 0, .play(rate: nil))
        sim.run(for: 1 * s)
        let (d, r) = sim.hosts[1].node.playerBeginSuspension(id: 1, reason: "interruption", now: sim.local(1))
        sim.execute(1, d)
        let sid = try r.get()
        sim.run(for: 100 * ms)
        let stamp = sim.hosts[0].node.replica.state.items[Self.film]?.stamp
        // Its pause goes nowhere; the group's seek does not reach it.
        intent(&sim, 1, .pause)
        sim.run(for: 100 * ms)
        #expect(sim.hosts[0].node.replica.state.items[Self.film]?.stamp == stamp)
        let before = told(sim, 1).count
        intent(&sim, 2, .seek(position: 100 * s))
        sim.run(for: 200 * ms)
        #expect(!told(sim, 1).dropFirst(before).contains { if case .timeline = $0.instruction { return true } else { return false } })
        // The others see why it is out.
        let list = sim.hosts[0].node.participants(on: Self.film)
        #expect(list.first { $0.name == "p1" }?.suspensions == ["interruption"])
        // Ending the suspension: told the group's current timeline.
        sim.execute(1, sim.hosts[1].node.playerEndSuspension(id: 1, suspension: sid, proposedPosition: nil, now: sim.local(1)).0)
        sim.run(for: 100 * ms)
        let back = try #require(lastTimeline(sim, 1))
        #expect(back.phase == .playing && back.record.action == .seek)
    }

    @Test("ending a suspension with a proposed time moves the whole group there (a scrub)")
    mutating func proposedTime() throws {
        var sim = group(3)
        _ = load(&sim, 0)
        sim.run(for: 100 * ms)
        for i in 1..<3 { _ = load(&sim, i) }
        for i in 0..<3 { ready(&sim, i) }
        sim.run(for: 100 * ms)
        intent(&sim, 0, .play(rate: nil))
        sim.run(for: 1 * s)
        let (d, r) = sim.hosts[2].node.playerBeginSuspension(id: 1, reason: "user-changing-time", now: sim.local(2))
        sim.execute(2, d)
        sim.run(for: 500 * ms)
        sim.execute(2, sim.hosts[2].node.playerEndSuspension(id: 1, suspension: try r.get(), proposedPosition: 30 * s, now: sim.local(2)).0)
        sim.run(for: 200 * ms)
        for i in 0..<3 {
            let t = try #require(lastTimeline(sim, i))
            #expect(t.record.reason == "suspension-ended" && t.record.timeline.position == 30 * s && t.record.stamp.origin == sim.peer(2))
        }
    }

    @Test("a suspension reason configured to make others wait holds the group until it ends")
    mutating func waitingReason() throws {
        var sim = group(3) { $0.waitingReasons = ["interstitial"] }
        _ = load(&sim, 0)
        sim.run(for: 100 * ms)
        for i in 1..<3 { _ = load(&sim, i) }
        for i in 0..<3 { ready(&sim, i) }
        sim.run(for: 100 * ms)
        intent(&sim, 0, .play(rate: nil))
        sim.run(for: 1 * s)
        let (d, r) = sim.hosts[1].node.playerBeginSuspension(id: 1, reason: "interstitial", now: sim.local(1))
        sim.execute(1, d)
        sim.run(for: 200 * ms)
        #expect(sim.hosts[0].node.replica.state.items[Self.film]?.timeline.phase == .waiting)
        #expect(told(sim, 0).contains { if case .wait(_, _, _, let w, _) = $0.instruction { return w.map(\.why) == ["interstitial"] } else { return false } })
        sim.execute(1, sim.hosts[1].node.playerEndSuspension(id: 1, suspension: try r.get(), proposedPosition: nil, now: sim.local(1)).0)
        sim.run(for: 300 * ms)
        #expect(sim.hosts[0].node.replica.state.items[Self.film]?.timeline.phase == .playing)
        #expect(try #require(lastTimeline(sim, 2)).record.reason == "ready")
    }

    @Test("commands apply only between players of the same item; a player on another item is not disturbed")
    mutating func itemIdentity() throws {
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
    mutating func lateJoiner() throws {
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
    mutating func playImmediately() throws {
        var sim = group(2)
        _ = load(&sim, 0)
        sim.run(for: 100 * ms)
        _ = load(&sim, 1)
        ready(&sim, 0)
        sim.run(for: 100 * ms)
        sim.execute(0, sim.hosts[0].node.playerPlayImmediately(id: 1, rate: nil, now: sim.local(0)).0)
        sim.run(for: 200 * ms)
        let t = try #require(lastTimeline(sim, 0))
        #expect(t.phase == .playing && t.record.reason == "play-immediately")
    }

    @Test("output latency is folded in: a player with 50 ms more latency is told a position 50 ms further on")
    mutating func outputLatency() throws {
        var sim = Simulation(hosts: 2, seed: 4)
        sim.run(for: 3 * s)
        sim.execute(0, sim.hosts[0].node.addPlayer(id: 1, info: .init(name: "tv", startLatencyNs: 20 * ms), now: sim.local(0)))
        sim.execute(1, sim.hosts[1].node.addPlayer(id: 1, info: .init(name: "bluetooth", outputLatencyNs: 50 * ms, startLatencyNs: 20 * ms), now: sim.local(1)))
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
    mutating func driftCorrected() throws {
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
        // Reports describe a moment just past (here 5 ms ago), as real ones do.
        let reportedAt = sim.local(1) - 5 * ms
        let truth = start.position + Int64(Double(reportedAt - sim.hosts[1].clock.device(fromHost: start.trueAt)) * start.rate)
        sim.execute(1, sim.hosts[1].node.playerPosition(id: 1, position: truth + 3 * ms, at: reportedAt, now: sim.local(1)))
        let corrections = told(sim, 1, since: now).compactMap { entry -> SyncPolicy.Correction? in
            if case .correction(let c) = entry.instruction { return c }
            return nil
        }
        guard case .rate(let rate, _, let error)? = corrections.first else {
            Issue.record("expected a rate correction, got \(corrections)")
            return
        }
        #expect(rate < start.rate)
        #expect(abs(error - 3 * ms) < 20 * Nanos.microsecond)
    }

    @Test("a player that goes to buffering while the group plays is put in stall recovery; the others play on")
    mutating func stallRecovery() throws {
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
        #expect(told(sim, 1).contains { if case .suspension(true, _, "stall-recovery", true) = $0.instruction { return true } else { return false } })
        #expect(sim.hosts[0].node.replica.state.items[Self.film]?.timeline.phase == .playing)
        ready(&sim, 1)
        sim.run(for: 100 * ms)
        #expect(told(sim, 1).contains { if case .suspension(false, _, "stall-recovery", true) = $0.instruction { return true } else { return false } })
    }
}

@Suite("Sync policy")
struct SyncPolicyTests {
    let ms = Nanos.millisecond
    let playing = Timeline(phase: .playing, anchorTime: 0, position: 0, rate: 1)

    @Test("an error below the start threshold is left alone; above it a rate-capable player gets a rate nudge that closes the gap")
    func nudge() throws {
        var policy = SyncPolicy()
        #expect(policy.onReport(position: 1_000_000 + 150_000, reportedAt: 1_000_000, timeline: playing, outputLatencyNs: 0, canChangeRate: true, leadNs: 20 * ms, now: 1_000_000) == nil)
        let c = policy.onReport(position: 2_000_000 + 10 * ms, reportedAt: 2_000_000, timeline: playing, outputLatencyNs: 0, canChangeRate: true, leadNs: 20 * ms, now: 2_000_000)
        guard case .rate(let rate, let until, let error)? = c else {
            Issue.record("expected a rate correction, got \(String(describing: c))")
            return
        }
        #expect(error == 10 * ms)
        #expect(rate < 1 && rate >= 0.98)
        // Over the correction the player loses exactly the error.
        #expect(abs((1 - rate) * Double(until - 2_000_000) - Double(10 * ms)) < 1_000)
    }

    @Test("a large error is fixed by an exact seek to where the timeline will be")
    func seek() {
        var policy = SyncPolicy()
        let c = policy.onReport(position: 700 * ms, reportedAt: 1000 * ms, timeline: playing, outputLatencyNs: 0, canChangeRate: true, leadNs: 20 * ms, now: 1000 * ms)
        #expect(c == .seek(position: 1020 * ms, at: 1020 * ms, errorNs: -300 * ms))
        // The next reports before the seek landed are ignored.
        #expect(policy.onReport(position: 710 * ms, reportedAt: 1010 * ms, timeline: playing, outputLatencyNs: 0, canChangeRate: true, leadNs: 20 * ms, now: 1010 * ms) == nil)
    }

    @Test("players without rate control get seeks only, and only above their own threshold")
    func seekOnly() {
        var policy = SyncPolicy()
        #expect(policy.onReport(position: 1000 * ms + 20 * ms, reportedAt: 1000 * ms, timeline: playing, outputLatencyNs: 0, canChangeRate: false, leadNs: 20 * ms, now: 1000 * ms) == nil)
        guard case .seek? = policy.onReport(position: 2000 * ms + 60 * ms, reportedAt: 2000 * ms, timeline: playing, outputLatencyNs: 0, canChangeRate: false, leadNs: 20 * ms, now: 2000 * ms) else {
            Issue.record("expected a seek")
            return
        }
    }

    @Test("hysteresis: a correction ends once the error is below the settle threshold, and a small error does not restart it")
    func hysteresis() {
        var policy = SyncPolicy()
        _ = policy.onReport(position: 5 * ms, reportedAt: 0, timeline: playing, outputLatencyNs: 0, canChangeRate: true, leadNs: 20 * ms, now: 0)
        // Within the hold time nothing new is planned.
        #expect(policy.onReport(position: 100 * ms + 4 * ms, reportedAt: 100 * ms, timeline: playing, outputLatencyNs: 0, canChangeRate: true, leadNs: 20 * ms, now: 100 * ms) == nil)
        // Settled: back to the timeline's rate.
        #expect(policy.onReport(position: 600 * ms + 40_000, reportedAt: 600 * ms, timeline: playing, outputLatencyNs: 0, canChangeRate: true, leadNs: 20 * ms, now: 600 * ms) == .rate(1, until: 600 * ms, errorNs: 40_000))
        // 150 µs is below the start threshold once in sync.
        #expect(policy.onReport(position: 700 * ms + 150_000, reportedAt: 700 * ms, timeline: playing, outputLatencyNs: 0, canChangeRate: true, leadNs: 20 * ms, now: 700 * ms) == nil)
    }

    @Test("the output latency is part of the target: a player with 40 ms latency must be 40 ms ahead")
    func latency() {
        var policy = SyncPolicy()
        #expect(policy.onReport(position: 1040 * ms, reportedAt: 1000 * ms, timeline: playing, outputLatencyNs: 40 * ms, canChangeRate: true, leadNs: 20 * ms, now: 1000 * ms) == nil)
        #expect(policy.lastErrorNs == 0)
    }
}
