import PropertyBased
import Testing

@testable import LockstepCore

/// The group's history against an oracle: whatever the network does (delays, reordering,
/// drops, duplicates, partitions), every replica ends in exactly the state that applying every
/// operation one by one in stamp order gives, and reports every pair of concurrent commands.
@Suite("Operation log: the vector-clock merge")
struct OperationLogTests {
    static let items = ["a", "b", "c"].map { ItemID("film-\($0)")! }

    /// A history: `peers` replicas issuing random commands on their own (drifting) clocks, their
    /// operations carried by a hostile network; at the end, anti-entropy until nothing is missing.
    struct History {
        var logs: [OperationLog]
        /// Every operation issued, and its origin's causal past when issued (the ground truth).
        var issued: [GroupOperation] = []
        var pasts: [OperationID: Set<OperationID>] = [:]
        /// Which operations each replica had when it issued: the ground truth of "had seen".
        var seen: [Set<OperationID>]

        init(peers: Int, configuration: OperationLog.Configuration) {
            let replicas = (0..<peers).map { ReplicaID(peer: PeerID(high: 3, low: UInt64($0 + 1)), incarnation: 1) }
            logs = replicas.map { OperationLog(me: $0, configuration: configuration) }
            seen = Array(repeating: [], count: peers)
            for i in logs.indices { logs[i].setMembers(Set(replicas)) }
        }

        mutating func deliver(_ op: GroupOperation, to i: Int) {
            _ = logs[i].receive(op, stampLimit: .max)
            // What it applied is what it has seen (waiting operations are not seen yet).
            seen[i] = Set(issued.map(\.id).filter { logs[i].applied.contains($0) })
        }

        static func command(_ rng: inout SplitMix64) -> (ItemID?, OperationCommand) {
            let item = items[Int(rng.next() % UInt64(items.count))]
            switch rng.next() % 10 {
            case 0: return (item, .load(ItemMetadata(title: item.value)))
            case 1: return (item, .play(rate: nil, waits: rng.next() % 4 == 0))
            case 2: return (item, .play(rate: [0.5, 1, 2][Int(rng.next() % 3)], waits: false))
            case 3, 4: return (item, .pause)
            case 5, 6: return (item, .seek(MediaPosition(clamping: Int64(rng.next() % 7_200) * 1_000_000_000)))
            case 7: return (item, .rate([0.5, 1, 1.25, 2][Int(rng.next() % 4)]))
            case 8: return (item, rng.next() % 2 == 0 ? .hold(.stallRecovery) : .start)
            default: return (rng.next() % 3 == 0 ? nil : item, .stop)
            }
        }

        /// Runs `steps` steps: each step one replica may issue a command; datagrams in flight
        /// arrive after random delays, some dropped, some twice; `partition` cuts the replicas
        /// into groups that cannot talk during part of the run.
        mutating func run(steps: Int, seed: UInt64, drop: Double, duplicate: Double, partitioned: ClosedRange<Int>?, sides: Int) {
            var rng = SplitMix64(seed: seed)
            let n = logs.count
            let side = (0..<n).map { _ in Int(rng.next() % UInt64(max(sides, 1))) }
            let skew = (0..<n).map { _ in Int64(rng.next() % 2_000_000) - 1_000_000 }  // ±1 ms between clocks
            var inFlight: [(at: Int, to: Int, op: GroupOperation)] = []
            for step in 0..<steps {
                let now = Int64(step) * 10_000_000  // 10 ms per step
                for (k, m) in inFlight.enumerated().reversed() where m.at <= step {
                    inFlight.remove(at: k)
                    deliver(m.op, to: m.to)
                }
                guard rng.next() % 3 == 0 else { continue }
                let i = Int(rng.next() % UInt64(n))
                let (item, command) = Self.command(&rng)
                let t = PeerTime(ns: now + 200_000_000)
                let ops = logs[i].issue(
                    item: item, command: command, reason: nil, basis: logs[0].me.peer, at: t, originAt: t, basisBound: .zero,
                    result: Timeline(phase: .paused, anchorTime: t, position: .zero, rate: 1), stampTime: now + skew[i])
                for op in ops {
                    pasts[op.id] = seen[i]
                    issued.append(op)
                    seen[i].insert(op.id)
                    for j in 0..<n where j != i {
                        let cut = partitioned.map { $0.contains(step) && side[i] != side[j] } ?? false
                        if cut || rng.chance(drop) { continue }
                        inFlight.append((step + Int(rng.next() % 30), j, op))
                        if rng.chance(duplicate) { inFlight.append((step + Int(rng.next() % 60), j, op)) }
                    }
                }
            }
            for m in inFlight.shuffled(using: &rng) { deliver(m.op, to: m.to) }
        }

        /// Anti-entropy between every pair until nothing is missing, digests included (so that
        /// stability is learnt and the logs fold).
        mutating func heal() {
            for _ in 0..<4 {
                for i in logs.indices {
                    for j in logs.indices where i != j {
                        for op in logs[j].missing(from: logs[i].applied) { deliver(op, to: i) }
                        logs[j].onDigest(logs[i].applied, from: logs[i].me)
                    }
                }
            }
        }

        /// Every operation applied one by one in stamp order.
        var oracle: GroupState {
            var s = GroupState()
            for op in issued.sorted(by: { $0.stamp < $1.stamp }) { s.apply(op) }
            return s
        }

        /// Pairs of commands neither of whose origins had seen the other (joins aside). A
        /// replica's applied set is causally closed, so `pasts` are whole causal pasts.
        var concurrentPairs: [(OperationID, OperationID)] {
            let ops = issued.filter { $0.command != .join }
            var out: [(OperationID, OperationID)] = []
            for (k, a) in ops.enumerated() {
                for b in ops[(k + 1)...] where !(pasts[b.id]?.contains(a.id) ?? false) && !(pasts[a.id]?.contains(b.id) ?? false) {
                    out.append((a.id, b.id))
                }
            }
            return out
        }
    }

    @Test(
        "random histories of up to 16 peers (concurrency, partitions, drops, duplicates, reordering) end on every replica in the oracle's state",
        .tags(.simulation))
    func oracle() async {
        await propertyCheck(count: 24, input: Gen.int(in: 2...16), Gen.int(in: 20...240), Gen.int(in: 0...Int.max)) { peers, steps, seed in
            var configuration = OperationLog.Configuration()
            configuration.maxReports = 100_000
            var h = History(peers: peers, configuration: configuration)
            var rng = SplitMix64(seed: UInt64(seed))
            let start = Int(rng.next() % UInt64(steps))
            h.run(
                steps: steps, seed: UInt64(seed), drop: [0, 0.1, 0.3][Int(rng.next() % 3)], duplicate: 0.2,
                partitioned: rng.next() % 2 == 0 ? start...(start + steps / 2) : nil, sides: 2 + Int(rng.next() % 2))
            h.heal()
            let expected = h.oracle
            for log in h.logs {
                #expect(log.state == expected, "replica \(log.me) of \(peers), \(h.issued.count) operations")
                #expect(log.waitingCount == 0)
                #expect(log.late == 0 && log.forcedFolds == 0)
                #expect(log.unstable.isEmpty, "every operation is stable once every member has them all")
            }
            // Every concurrent pair is visible in every replica's reports.
            for log in h.logs {
                var reported: Set<[OperationID]> = []
                for r in log.reports {
                    for w in r.with { reported.insert([w.stamp.id, r.command.stamp.id].sorted()) }
                }
                for (a, b) in h.concurrentPairs {
                    #expect(reported.contains([a, b].sorted()), "replica \(log.me) reports \(a) ∥ \(b)")
                }
            }
        }
    }

    @Test("64 replicas, partitioned and lossy: every replica in the oracle's state, vectors exact for all 64", .tags(.simulation))
    func sixtyFourReplicas() async {
        await propertyCheck(count: 1, input: Gen.int(in: 0...Int.max)) { seed in
            var h = History(peers: 64, configuration: .init())
            h.run(steps: 120, seed: UInt64(seed), drop: 0.1, duplicate: 0.1, partitioned: 30...100, sides: 3)
            h.heal()
            let expected = h.oracle
            for log in h.logs {
                #expect(log.state == expected)
                #expect(log.applied.counters.count == Set(h.issued.map(\.stamp.replica)).count, "one vector entry per replica that issued")
            }
        }
    }

    @Test("an operation whose origin had seen another is stamped after it: causally later wins")
    func causalOrder() async {
        await propertyCheck(count: 30, input: Gen.int(in: 2...8), Gen.int(in: 20...120), Gen.int(in: 0...Int.max)) { peers, steps, seed in
            var h = History(peers: peers, configuration: .init())
            h.run(steps: steps, seed: UInt64(seed), drop: 0.1, duplicate: 0.1, partitioned: nil, sides: 1)
            for op in h.issued {
                for p in h.pasts[op.id] ?? [] {
                    let earlier = h.issued.first { $0.id == p }!
                    #expect(earlier.stamp < op.stamp)
                }
            }
        }
    }

    @Test("an operation waits for those it depends on, then applies; stability needs every member; a stable prefix folds")
    func deliveryAndStability() {
        let a = ReplicaID(peer: PeerID(high: 1, low: 1), incarnation: 1), b = ReplicaID(peer: PeerID(high: 1, low: 2), incarnation: 1)
        var la = OperationLog(me: a), lb = OperationLog(me: b)
        la.setMembers([a, b])
        lb.setMembers([a, b])
        let item = Self.items[0]
        func issue(_ log: inout OperationLog, _ command: OperationCommand, at t: Int64) -> GroupOperation {
            log.issue(
                item: item, command: command, reason: nil, basis: a.peer, at: PeerTime(ns: t), originAt: PeerTime(ns: t), basisBound: .zero, result: nil,
                stampTime: t
            ).last!
        }
        let load = issue(&la, .load(ItemMetadata()), at: 1_000)
        let seek = issue(&la, .seek(MediaPosition(clamping: 5_000)), at: 2_000)
        #expect(lb.receive(seek, stampLimit: .max) == .waiting)
        #expect(lb.state.current == nil)
        #expect(lb.receive(load, stampLimit: .max) == .applied)
        #expect(lb.state.items[item]?.timeline.position.ns == 5_000)
        #expect(lb.receive(load, stampLimit: .max) == .duplicate)
        // Not stable until a knows b has them.
        #expect(la.unstable.count == 2)
        la.onDigest(lb.applied, from: b)
        #expect(la.unstable.isEmpty)
        #expect(la.folded.contains(seek.id))
        #expect(la.state == lb.state)
        // b's next operation, issued after seeing both, says so: a folds on receiving it.
        let pause = issue(&lb, .pause, at: 3_000)
        #expect(pause.heads == [seek.id])
        #expect(pause.stamp > seek.stamp)
        #expect(la.receive(pause, stampLimit: .max) == .applied)
        #expect(la.state.items[item]?.timeline.phase == .paused)
    }

    @Test("an operation stamped far ahead of every known clock is refused, and so are impossible heads")
    func refusals() {
        let a = ReplicaID(peer: PeerID(high: 1, low: 1), incarnation: 1), b = ReplicaID(peer: PeerID(high: 1, low: 2), incarnation: 1)
        var log = OperationLog(me: a)
        log.setMembers([a, b])
        let t = PeerTime(ns: 0)
        let ahead = GroupOperation(stamp: Stamp(time: 1 << 62, origin: b.peer, incarnation: 1, seq: 1), heads: [], item: Self.items[0], command: .pause, basis: a.peer, at: t, originAt: t)
        #expect(log.receive(ahead, stampLimit: 1_000) == .refused(.stampTooFarAhead))
        #expect(log.time < 1_000)
        let selfHead = GroupOperation(
            stamp: Stamp(time: 5, origin: b.peer, incarnation: 1, seq: 2), heads: [OperationID(replica: b, seq: 2)], item: Self.items[0], command: .pause,
            basis: a.peer, at: t, originAt: t)
        #expect(log.receive(selfHead, stampLimit: 1_000) == .refused(.invalidHeads))
    }

    @Test("a frontier wider than an operation may carry goes first in join operations, and the causal past stays exact")
    func wideFrontier() {
        let replicas = (0..<30).map { ReplicaID(peer: PeerID(high: 2, low: UInt64($0 + 1)), incarnation: 1) }
        var logs = replicas.map { OperationLog(me: $0) }
        for i in logs.indices { logs[i].setMembers(Set(replicas)) }
        // Everyone but the last issues one concurrent command; the last sees them all.
        var ops: [GroupOperation] = []
        for i in 0..<29 {
            let t = PeerTime(ns: Int64(i))
            ops += logs[i].issue(item: Self.items[0], command: .pause, reason: nil, basis: replicas[0].peer, at: t, originAt: t, basisBound: .zero, result: nil, stampTime: Int64(i))
        }
        for op in ops { _ = logs[29].receive(op, stampLimit: .max) }
        #expect(logs[29].frontier.count == 29)
        let t = PeerTime(ns: 100)
        let out = logs[29].issue(
            item: Self.items[0], command: .seek(.zero), reason: nil, basis: replicas[0].peer, at: t, originAt: t, basisBound: .zero, result: nil, stampTime: 100)
        #expect(out.count == 2)
        #expect(out[0].command == .join && out[0].heads.count == 29)
        #expect(out[1].heads == [out[0].id])
        // A replica receiving them in any order knows the seek saw every one of the 29.
        var other = OperationLog(me: replicas[0])
        other.setMembers(Set(replicas))
        for op in (ops + out).reversed() { _ = other.receive(op, stampLimit: .max) }
        #expect(other.waitingCount == 0)
        #expect(other.frontier == [out.last!.id])
    }

    @Test("a checkpoint vector imported with registers takes the operations it covers out of the log, so that they cannot undo the newer registers")
    func importedCheckpointCoversLoggedOperations() throws {
        let a = ReplicaID(peer: PeerID(high: 1, low: 1), incarnation: 1), b = ReplicaID(peer: PeerID(high: 1, low: 2), incarnation: 1)
        let away = ReplicaID(peer: PeerID(high: 1, low: 3), incarnation: 1)
        var la = OperationLog(me: a), lb = OperationLog(me: b)
        la.setMembers([a, away])
        lb.setMembers([b, away])
        let item = Self.items[0]
        func issue(_ command: OperationCommand, at t: Int64) -> GroupOperation {
            la.issue(item: item, command: command, reason: nil, basis: a.peer, at: PeerTime(ns: t), originAt: PeerTime(ns: t), basisBound: .zero, result: nil, stampTime: t).last!
        }
        let load = issue(.load(ItemMetadata()), at: 1_000), first = issue(.seek(MediaPosition(clamping: 100)), at: 2_000)
        let second = issue(.seek(MediaPosition(clamping: 300)), at: 3_000)
        // b holds the first two unstable (it waits for `away`), and gets a's later folded state.
        _ = lb.receive(load, stampLimit: .max)
        _ = lb.receive(first, stampLimit: .max)
        var folded = GroupState()
        for op in [load, first, second] { folded.apply(op) }
        lb.importRecord(try #require(folded.current))
        lb.importRecord(try #require(folded.items[item]))
        #expect(lb.state.items[item]?.timeline.position.ns == 100, "the logged first seek, replayed on top, undoes the imported second")
        lb.importFolded([.init(replica: a, counter: 3)])
        #expect(lb.unstable.isEmpty)
        #expect(lb.state == folded)
        #expect(lb.applied.contains(second.id))
    }

    @Test("a replica holding none of the group's history does not fold its load with others as new as itself: it finds the group's timeline when it meets the group")
    func returningBehindRemoval() throws {
        // h1 holds the group's history (film-a, sought to 50 s); h4 was removed while h5 was
        // away; both come back new, with the roster h5 last knew, and meet first.
        let h1 = ReplicaID(peer: PeerID(high: 1, low: 1), incarnation: 1), h2 = PeerID(high: 1, low: 2)
        let h4 = ReplicaID(peer: PeerID(high: 1, low: 4), incarnation: 2), h5 = ReplicaID(peer: PeerID(high: 1, low: 5), incarnation: 2)
        let item = Self.items[0]
        var group = GroupState()
        for (k, command) in [OperationCommand.load(ItemMetadata()), .seek(MediaPosition(clamping: 50_000_000_000))].enumerated() {
            let t = PeerTime(ns: Int64(k + 1) * 1_000)
            group.apply(GroupOperation(stamp: Stamp(time: t.ns, origin: h1.peer, incarnation: 1, seq: UInt64(k + 1)), heads: [], item: item, command: command, basis: h1.peer, at: t, originAt: t))
        }
        var l5 = OperationLog(me: h5), l4 = OperationLog(me: h4)
        l5.setRoster([h1.peer, h2, h4.peer, h5.peer])
        l4.setRoster([h1.peer, h2, h4.peer, h5.peer])
        l5.setMembers([h5, h4])
        l4.setMembers([h5, h4])
        let t = PeerTime(ns: 10_000)
        let load = try #require(
            l5.issue(item: item, command: .load(ItemMetadata()), reason: nil, basis: h5.peer, at: t, originAt: t, basisBound: .zero, result: nil, stampTime: t.ns).last)
        #expect(l4.receive(load, stampLimit: .max) == .applied)
        l5.onDigest(l4.applied, from: h4)
        #expect(l5.unstable.count == 1, "not folded with h4 alone: h1 and h2 of the roster not heard yet")
        // h5 learns of the removals (h2's too) from h1, whose digest (naming replicas h5 does not
        // know: the group's history) shows it has the load before its registers arrive.
        l5.setRoster([h1.peer, h5.peer])
        l5.setMembers([h5, h1])
        var seen = VersionVector()
        seen[h5] = 1
        l5.onDigest(seen, from: h1, complete: false)
        #expect(l5.unstable.count == 1, "not folded before the registers of the history h1's digest shows")
        l5.importRecord(try #require(group.current))
        l5.importRecord(try #require(group.items[item]))
        l5.importFolded([.init(replica: h1, counter: 2)])
        #expect(l5.state.items[item]?.timeline.position.ns == 50_000_000_000, "the group's timeline, not h5's load from zero")
        #expect(l5.state.items[item]?.stamp.origin == h1.peer)
        // Once it holds the history, stability is as usual.
        l5.onDigest(l5.applied, from: h1)
        #expect(l5.unstable.isEmpty)
        #expect(l5.holdsHistory)
    }

    @Test("a log past its bound folds its oldest, counts it, and applies a late operation right after the checkpoint")
    func bounds() {
        var configuration = OperationLog.Configuration()
        configuration.maxUnstable = 4
        let a = ReplicaID(peer: PeerID(high: 1, low: 1), incarnation: 1), away = ReplicaID(peer: PeerID(high: 1, low: 9), incarnation: 1)
        var log = OperationLog(me: a, configuration: configuration)
        log.setMembers([a, away])
        for i in 0..<6 {
            let t = PeerTime(ns: Int64(i + 1) * 1_000)
            _ = log.issue(item: Self.items[0], command: i == 0 ? .load(ItemMetadata()) : .seek(MediaPosition(clamping: Int64(i))), reason: nil, basis: a.peer, at: t, originAt: t, basisBound: .zero, result: nil, stampTime: t.ns)
        }
        #expect(log.unstable.count == 4)
        #expect(log.forcedFolds == 2)
        let t = PeerTime(ns: 500)
        let late = GroupOperation(stamp: Stamp(time: 500, origin: away.peer, incarnation: 1, seq: 1), heads: [], item: Self.items[0], command: .pause, basis: a.peer, at: t, originAt: t)
        #expect(log.receive(late, stampLimit: .max) == .applied)
        #expect(log.late == 1)
        // Placed right after the checkpoint (the log being full, it folds there at once): the
        // later seeks still apply after it.
        #expect(log.folded.contains(late.id))
        #expect(log.state.items[Self.items[0]]?.timeline.position.ns == 5)
    }
}
