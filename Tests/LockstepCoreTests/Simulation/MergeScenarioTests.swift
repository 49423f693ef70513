import LockstepSimKit
import Testing

@testable import LockstepCore

/// The merge as a user sees it: real nodes, simulated clocks and network, the scenarios of the
/// vector-clock merge issue. Each ends as a single remote control would have left the group had
/// every press reached it in the order the presses happened.
@Suite("Merge scenarios", .tags(.simulation))
struct MergeScenarioTests {
    static let film = ItemID("file:///films/night.mkv")!
    let s = Nanos.second, ms = Nanos.millisecond

    /// A settled group of `hosts` playing the film from 0; with `players`, a ready player
    /// (id 1) on every host follows it.
    func playing(_ hosts: Int, seed: UInt64 = 5, players: Bool = false) -> GroupSimulation {
        var sim = GroupSimulation(hosts: hosts, seed: seed)
        sim.run(for: 3 * s)
        if players {
            for i in 0..<hosts {
                sim.execute(i, sim.hosts[i].node.onPlayerHello(id: 1, info: .init(name: "p\(i)", canChangeRate: true, exactSeek: true, startLatency: .milliseconds(20)), now: sim.local(i)))
            }
        }
        sim.issue(0, .load(Self.film, .init(title: "Night")))
        sim.run(for: 100 * ms)
        if players {
            for i in 0..<hosts {
                sim.execute(i, sim.hosts[i].node.onPlayerLoad(id: 1, item: Self.film, metadata: .init(), solo: false, now: sim.local(i)))
                sim.execute(i, sim.hosts[i].node.onPlayerReadiness(id: 1, .ready, now: sim.local(i)))
            }
            sim.run(for: 100 * ms)
        }
        sim.issue(0, .play(rate: nil))
        sim.run(for: 1 * s)
        return sim
    }

    /// The first example: hosts 0 and 1 cut off from 2 and 3; host 0 seeks to 100, 200 and
    /// 300 s, 0.4 s apart; a second later host 3 pauses; then 2 s pass, still cut off.
    func seeksThenPause(_ sim: inout GroupSimulation) {
        sim.partition([0, 1], [2, 3])
        sim.run(for: 500 * ms)
        for target in [100, 200, 300] {
            sim.issue(0, .seek(position: MediaPosition(clamping: Int64(target) * s)))
            sim.run(for: 400 * ms)
        }
        sim.run(for: 1 * s)
        sim.issue(3, .pause)
        sim.run(for: 2 * s)
    }

    /// Host `i`'s position at true time `t` (ns), from its own view of the group.
    func position(_ sim: GroupSimulation, _ i: Int, atTrue t: Int64) -> Int64? {
        let node = sim.hosts[i].node
        guard let r = node.group.state.items[Self.film], let timeline = node.timelines.timeline(of: r, now: sim.local(i)) else { return nil }
        return timeline.position(at: sim.hosts[i].clock.device(fromHost: t)).ns
    }

    func states(_ sim: GroupSimulation) -> Set<GroupState> { Set(sim.hosts.map(\.node.group.state)) }

    @Test("a partition: one side seeks three times, later the other pauses; healed, the group is paused where the pause found it, on every peer")
    func seeksThenPauseAcrossAPartition() throws {
        var sim = playing(4)
        seeksThenPause(&sim)
        #expect(sim.hosts[0].node.group.state.items[Self.film]?.timeline.phase == .playing, "the seeking side plays on meanwhile")
        sim.heal()
        sim.run(for: 2 * s)
        #expect(states(sim).count == 1, "one state everywhere")
        let r = try #require(sim.hosts[1].node.group.state.items[Self.film])
        #expect(r.timeline.phase == .paused, "the latest intent, the pause, holds")
        #expect(r.stamp.origin == sim.peer(3) && r.action == .pause)
        // Paused where the group was when the pause took effect: 300 s plus the 1.4 s played
        // since the last seek (to within the lead times), not where the other side had been.
        let p = r.timeline.position.ns
        #expect(p > 301 * s && p < 301 * s + 500 * ms, "paused at \(Double(p) / 1e9) s")
        // Every peer reported the crossing commands.
        for h in sim.hosts { #expect(!h.node.group.log.reports.isEmpty) }
    }

    @Test("two people act at once: one seeks to 1:40, the other pauses; the group ends paused at 1:40, the seek kept (three seeds)")
    func seekAndPauseAtOnce() throws {
        for seed in UInt64(1)...3 {
            var sim = playing(3, seed: seed)
            sim.run(for: 10 * s)
            sim.issue(1, .seek(position: MediaPosition(clamping: 100 * s)))
            sim.issue(2, .pause)
            sim.run(for: 1 * s)
            #expect(states(sim).count == 1)
            let r = try #require(sim.hosts[0].node.group.state.items[Self.film])
            #expect(r.timeline.phase == .paused, "seed \(seed)")
            // Whichever came first by the clocks, the seek is not lost: paused at 1:40 (or a
            // lead time past it, had the seek come first while playing).
            #expect(r.timeline.position.ns >= 100 * s && r.timeline.position.ns < 100 * s + 100 * ms, "seed \(seed): paused at \(r.timeline.position)")
            let report = try #require(sim.hosts[0].node.group.log.reports.last)
            #expect(Set(report.all.map(\.action)) == [.seek, .pause])
        }
    }

    @Test("a three-way partition with a command on every side: healed, all three apply in the order they were issued")
    func threeWayPartition() throws {
        var sim = playing(6)
        sim.partition([0, 1], [2, 3, 4, 5])
        sim.partition([2, 3], [4, 5])
        sim.run(for: 500 * ms)
        sim.issue(0, .seek(position: MediaPosition(clamping: 30 * s)))
        sim.run(for: 1 * s)
        sim.issue(2, .setRate(2))
        sim.run(for: 1 * s)
        sim.issue(4, .pause)
        sim.run(for: 1 * s)
        #expect(states(sim).count == 3, "three sides, three states")
        sim.heal()
        sim.run(for: 2 * s)
        #expect(states(sim).count == 1, "one state everywhere")
        let r = try #require(sim.hosts[5].node.group.state.items[Self.film])
        // seek to 30 s, played 1 s at 1×, then 1 s at 2×, then paused: 33 s (to within the leads).
        #expect(r.timeline.phase == .paused)
        #expect(r.timeline.rate == 2, "the rate change holds")
        let p = r.timeline.position.ns
        #expect(p > 32_900 * ms && p < 33_200 * ms, "paused at \(Double(p) / 1e9) s")
        for h in sim.hosts {
            let crossed = Set(h.node.group.log.reports.flatMap { $0.all.map(\.action) })
            #expect(crossed.isSuperset(of: [.seek, .setRate, .pause]), "every peer reports the three crossing commands")
        }
    }

    @Test("what a player on the side that did not pause sees after the heal: the paused timeline, once, and the crossing commands")
    func playerAfterHeal() throws {
        var sim = playing(4, seed: 11, players: true)
        seeksThenPause(&sim)
        let healedAt = sim.now
        sim.heal()
        sim.run(for: 2 * s)
        let told = sim.hosts[1].log.compactMap { entry -> PlayerInstruction? in
            guard entry.time >= healedAt, case .tellPlayer(1, let i) = entry.directive else { return nil }
            return i
        }
        let timelines = told.compactMap { if case .timeline(_, let phase, let position, _, _, _) = $0 { (phase, position) } else { nil } }
        #expect(timelines.count == 1, "one jump: \(timelines)")
        #expect(timelines.last?.0 == .paused)
        #expect(timelines.last?.1 == sim.hosts[1].node.group.state.items[Self.film]?.timeline.position)
        #expect(told.contains { if case .concurrent = $0 { true } else { false } }, "the player is told the commands crossed")
    }

    @Test("after a heal the peers play in step again: positions agree to microseconds")
    func inStepAfterHeal() throws {
        var sim = playing(4)
        sim.partition([0, 1], [2, 3])
        sim.run(for: 300 * ms)
        sim.issue(0, .seek(position: MediaPosition(clamping: 50 * s)))
        sim.run(for: 200 * ms)
        sim.issue(2, .setRate(1.5))
        sim.run(for: 1 * s)
        sim.heal()
        sim.run(for: 2 * s)
        let positions = (0..<4).compactMap { position(sim, $0, atTrue: sim.now) }
        #expect(positions.count == 4)
        #expect(positions.max()! - positions.min()! < 20 * Nanos.microsecond, "positions differ by \(positions.max()! - positions.min()!) ns")
    }
}
