@testable import LockstepCore
import Testing

/// ``SampleWindow`` alone: capacity, ageing, order.
@Suite("Sample window")
struct SampleWindowTests {
    static func entry(_ local: Int64, delay: Int64 = 40_000, tag: Int64 = 0) -> SampleWindow.Entry {
        SampleWindow.Entry(local: local, out: delay / 2 + tag, back: delay / 2 - tag)
    }

    static func locals(_ w: SampleWindow) -> [Int64] {
        var all: [Int64] = []
        w.forEach { all.append($0.local) }
        return all
    }

    @Test("a full window drops its oldest sample for each new one")
    func capacity() {
        var w = SampleWindow(capacity: 4, maxAgeNs: .max)
        for t: Int64 in 0..<6 { w.append(Self.entry(t)) }
        #expect(w.count == 4)
        #expect(Self.locals(w) == [2, 3, 4, 5])
    }

    @Test("samples more than the maximum age older than the newest leave; the newest always stays")
    func ageing() {
        var w = SampleWindow(capacity: 8, maxAgeNs: 10)
        for t: Int64 in [0, 5, 10] { w.append(Self.entry(t)) }
        #expect(Self.locals(w) == [0, 5, 10])  // exactly the maximum age stays
        w.append(Self.entry(12))
        #expect(Self.locals(w) == [5, 10, 12])
        w.append(Self.entry(1_000))
        #expect(Self.locals(w) == [1_000])
    }

    @Test("removeAll empties the window, which then fills again from scratch")
    func removeAll() {
        var w = SampleWindow(capacity: 3, maxAgeNs: .max)
        for t: Int64 in 0..<5 { w.append(Self.entry(t)) }
        w.removeAll()
        #expect(w.count == 0 && Self.locals(w).isEmpty)
        w.append(Self.entry(9))
        #expect(Self.locals(w) == [9])
    }

    @Test("sorted(into:) gives local-time order, ties in arrival order, reusing the buffer it is given")
    func sortedOrder() {
        var w = SampleWindow(capacity: 8, maxAgeNs: .max)
        // Arrival order is not time order (replies overtake each other).
        for (t, tag): (Int64, Int64) in [(3, 0), (1, 0), (2, 1), (2, 2), (0, 0), (5, 0)] { w.append(Self.entry(t, tag: tag)) }
        var sorted = ContiguousArray<SampleWindow.Entry>()
        sorted.reserveCapacity(w.capacity)
        let buffer = sorted.withUnsafeBufferPointer { $0.baseAddress }
        w.sorted(into: &sorted)
        #expect(sorted.map(\.local) == [0, 1, 2, 2, 3, 5])
        #expect(sorted.map { $0.out - 20_000 } == [0, 0, 1, 2, 0, 0])
        #expect(sorted.withUnsafeBufferPointer { $0.baseAddress } == buffer)
        // A wrapped ring sorts the same way.
        for t: Int64 in [7, 6, 8] { w.append(Self.entry(t)) }
        w.sorted(into: &sorted)
        #expect(sorted.map(\.local) == Self.locals(w).sorted())
        #expect(sorted.withUnsafeBufferPointer { $0.baseAddress } == buffer)
    }

    @Test("the mean excess is over the minimum given, 0 for an empty window")
    func meanExcess() {
        var w = SampleWindow(capacity: 8, maxAgeNs: .max)
        #expect(w.meanExcess(over: 0) == 0)
        for (t, d): (Int64, Int64) in [(0, 40_000), (1, 50_000), (2, 70_000)] { w.append(Self.entry(t, delay: d)) }
        #expect(w.meanExcess(over: 40_000) == 13_333.333333333334)
    }

    @Test("an entry's offset and delay are the exchange's θ and δ")
    func entryFromSample() {
        let s = ClockSample(t1: 1_000, t2: 5_000_030, t3: 5_000_050, t4: 1_100)
        let e = SampleWindow.Entry(s)
        #expect(e.local == s.midpointLocal.ns && e.offset == s.offset && e.delay == s.delay)
    }
}
