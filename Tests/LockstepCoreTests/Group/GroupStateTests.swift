import PropertyBased
import Testing

@testable import LockstepCore

/// The merge of ``GroupState``: a join-semilattice whatever the records.
@Suite("Group state merge")
struct GroupStateTests {
    static let peers = (1...8).map { PeerID(high: 7, low: UInt64($0)) }
    static let items = ["a", "b", "c", "d"].map { ItemID("film-\($0)")! }

    /// Random records from up to 8 peers: item records and current-item records.
    static func records(seed: UInt64, count: Int, peers: Int = 8, items: [ItemID] = items) -> [Replica.Outgoing] {
        var rng = SplitMix64(seed: seed)
        var lamports = Array(repeating: UInt64(0), count: peers)
        var out: [Replica.Outgoing] = []
        for _ in 0..<count {
            let p = Int.random(in: 0..<peers, using: &rng)
            // Some peers have seen more than others: counters jump.
            lamports[p] += UInt64.random(in: 1...3, using: &rng)
            let stamp = Stamp(lamport: lamports[p], origin: Self.peers[p], incarnation: 1)
            let version = VersionVector([.init(peer: Self.peers[p], counter: lamports[p])])
            let item = items.randomElement(using: &rng)!
            if Int.random(in: 0..<5, using: &rng) == 0 {
                out.append(.current(CurrentRecord(item: Bool.random(using: &rng) ? item : nil, stamp: stamp, version: version)))
            } else {
                let phase = TimelinePhase.allCases.randomElement(using: &rng)!
                let t = Timeline(
                    phase: phase, anchorTime: PeerTime(ns: Int64.random(in: 0...1_000_000_000_000, using: &rng)),
                    position: MediaPosition(clamping: Int64.random(in: 0...7_200_000_000_000, using: &rng)), rate: [0.5, 1, 1.5, 2].randomElement(using: &rng)!)
                out.append(.item(ItemRecord(item: item, timeline: t, action: Action.allCases.randomElement(using: &rng)!, stamp: stamp, version: version)))
            }
        }
        return out
    }

    static func apply(_ records: [Replica.Outgoing], to state: inout GroupState) {
        for r in records {
            switch r {
            case .item(let i): state.merge(i)
            case .current(let c): state.merge(c)
            }
        }
    }

    @Test("replicas that receive the same records in any order, with duplicates, end identical")
    func orderAndDuplicates() async {
        await propertyCheck(count: 300, input: Gen.int(in: 1...60), Gen.int(in: 0...Int.max)) { count, seed in
            let records = Self.records(seed: UInt64(seed), count: count)
            var rng = SplitMix64(seed: UInt64(seed) ^ 0xdead)
            var reference = GroupState()
            Self.apply(records, to: &reference)
            for _ in 0..<4 {
                var delivery = records.shuffled(using: &rng)
                delivery += records.filter { _ in Bool.random(using: &rng) }.shuffled(using: &rng)
                var replica = GroupState()
                Self.apply(delivery.shuffled(using: &rng), to: &replica)
                #expect(replica == reference)
            }
        }
    }

    @Test("merging states is commutative, associative and idempotent")
    func lattice() async {
        await propertyCheck(count: 300, input: Gen.int(in: 0...40), Gen.int(in: 0...40), Gen.int(in: 0...Int.max)) { n1, n2, seed in
            var rng = SplitMix64(seed: UInt64(seed))
            let all = Self.records(seed: UInt64(seed), count: n1 + n2 + 20)
            func state(_ rs: some Collection<Replica.Outgoing>) -> GroupState {
                var s = GroupState()
                Self.apply(Array(rs), to: &s)
                return s
            }
            let a = state(all.filter { _ in Int.random(in: 0..<3, using: &rng) == 0 })
            let b = state(all.prefix(n1))
            let c = state(all.suffix(n2))
            func merge(_ x: GroupState, _ y: GroupState) -> GroupState {
                var z = x
                z.merge(y)
                return z
            }
            #expect(merge(a, b) == merge(b, a))
            #expect(merge(merge(a, b), c) == merge(a, merge(b, c)))
            #expect(merge(a, a) == a)
        }
    }

    @Test("with more items than the state keeps, replicas still agree (the most recent items are kept)")
    func boundedItems() async {
        let many = (0..<40).map { ItemID("item-\($0)")! }
        await propertyCheck(count: 100, input: Gen.int(in: 20...120), Gen.int(in: 0...Int.max)) { count, seed in
            let records = Self.records(seed: UInt64(seed), count: count, items: many)
            var rng = SplitMix64(seed: UInt64(seed))
            var x = GroupState(), y = GroupState()
            Self.apply(records, to: &x)
            Self.apply(records.shuffled(using: &rng), to: &y)
            #expect(x == y)
            #expect(x.items.count <= GroupState.maxItems)
        }
    }

    @Test("a dropped record is repaired by digest exchange: each side pushes what the other lacks")
    func antiEntropyRepairs() async {
        await propertyCheck(count: 200, input: Gen.int(in: 1...60), Gen.int(in: 0...Int.max)) { count, seed in
            var rng = SplitMix64(seed: UInt64(seed))
            let records = Self.records(seed: UInt64(seed), count: count)
            // Two replicas each miss a random part.
            var x = GroupState(), y = GroupState()
            Self.apply(records.filter { _ in Bool.random(using: &rng) }, to: &x)
            Self.apply(records.filter { _ in Bool.random(using: &rng) }, to: &y)
            // One round: x sends its digest; y pushes what x lacks; y, lacking something, sends its digest; x pushes.
            let toX = y.missing(from: x.digest)
            if let c = toX.current { x.merge(c) }
            for r in toX.items { x.merge(r) }
            let toY = x.missing(from: y.digest)
            if let c = toY.current { y.merge(c) }
            for r in toY.items { y.merge(r) }
            #expect(x == y)
            #expect(!x.lacksSomething(of: y.digest) && !y.lacksSomething(of: x.digest))
        }
    }

    @Test("a causally later command wins over the one it saw; concurrent ones are ordered by counter, then peer id")
    func rule() {
        let a = Self.peers[0], b = Self.peers[1]
        let item = Self.items[0]
        func record(_ lamport: UInt64, _ origin: PeerID, _ position: Int64) -> ItemRecord {
            ItemRecord(
                item: item, timeline: Timeline(phase: .paused, anchorTime: PeerTime(ns: 0), position: MediaPosition(clamping: position), rate: 1), action: .seek,
                stamp: Stamp(lamport: lamport, origin: origin, incarnation: 1), version: VersionVector())
        }
        var s = GroupState()
        s.merge(record(5, b, 1))
        s.merge(record(6, a, 2))  // issued after seeing b's (Lamport raised past 5)
        #expect(s.items[item]?.timeline.position.ns == 2)
        s.merge(record(6, b, 3))  // concurrent with a's 6: the larger peer id wins
        #expect(s.items[item]?.timeline.position.ns == (b > a ? 3 : 2))
    }

    @Test("version vectors tell causal order from concurrency, and stay bounded")
    func vectors() {
        let p = Self.peers
        let x = VersionVector([.init(peer: p[0], counter: 2), .init(peer: p[1], counter: 1)])
        let y = VersionVector([.init(peer: p[0], counter: 3), .init(peer: p[1], counter: 1)])
        let z = VersionVector([.init(peer: p[2], counter: 1)])
        #expect(x.compare(y) == .before)
        #expect(y.compare(x) == .after)
        #expect(x.compare(z) == .concurrent)
        #expect(x.compare(x) == .equal)
        let big = VersionVector((0..<40).map { .init(peer: PeerID(high: 1, low: UInt64($0)), counter: UInt64($0 + 1)) })
        #expect(big.entries.count == VersionVector.maxEntries)
    }
}
