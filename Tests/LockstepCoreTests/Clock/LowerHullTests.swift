@testable import LockstepCore
import LockstepSimKit
import Testing

/// ``LowerHull`` alone: known point sets, and the hull's defining properties on random ones.
@Suite("Lower hull")
struct LowerHullTests {
    static func points(_ xy: [(Int64, Int64)]) -> ContiguousArray<SampleWindow.Entry> {
        ContiguousArray(xy.map { SampleWindow.Entry(local: $0.0, out: $0.1, back: 0) })
    }

    static func hull(_ p: ContiguousArray<SampleWindow.Entry>, excluding: Int = -1) -> [Int] {
        var hull = ContiguousArray<Int>()
        LowerHull.build(of: p, value: { Double($0.out) }, excluding: excluding, into: &hull)
        return Array(hull)
    }

    @Test("the hull of a known set is the chain under it, left to right")
    func knownSet() {
        // (2, 3) lies above the edge from (1, 1) to (3, 0).
        #expect(Self.hull(Self.points([(0, 4), (1, 1), (2, 3), (3, 0), (4, 5)])) == [0, 1, 3, 4])
    }

    @Test("collinear points are not vertices: a line's hull is its two ends")
    func collinear() {
        #expect(Self.hull(Self.points((0..<10).map { (Int64($0) * 7, 100 - Int64($0) * 3) })) == [0, 9])
    }

    @Test("of points at the same time only the lowest can be a vertex")
    func sameTime() {
        #expect(Self.hull(Self.points([(0, 0), (1, 5), (1, -1), (2, 0)])) == [0, 2, 3])
        #expect(Self.hull(Self.points([(0, 0), (1, -1), (1, 5), (2, 0)])) == [0, 1, 3])
    }

    @Test("a point left out is not a vertex, and the hull closes over it")
    func excluding() {
        let p = Self.points([(0, 4), (1, 1), (2, 3), (3, 0), (4, 5)])
        #expect(Self.hull(p, excluding: 3) == [0, 1, 4])
        #expect(Self.hull(p, excluding: 0) == [1, 3, 4])
    }

    @Test("one point is its own hull; no points, no hull")
    func degenerate() {
        #expect(Self.hull(Self.points([(5, 5)])) == [0])
        #expect(Self.hull(Self.points([])) == [])
    }

    @Test("on random sets every point lies on or above the hull, whose slopes rise strictly")
    func randomSets() {
        var rng = SplitMix64(seed: 3)
        for _ in 0..<200 {
            let n = 1 + Int(rng.unit() * 40)
            var x: Int64 = 0
            let p = Self.points((0..<n).map { _ in
                x += Int64(rng.unit() * 3)  // ties happen
                return (x, Int64(rng.unit() * 1_000) - 500)
            })
            let h = Self.hull(p)
            #expect(h.first.map { p[$0].local } == p.first?.local)
            #expect(h.last == p.count - 1 || p[h.last!].local == p.last!.local)
            for (i, j) in zip(h, h.dropFirst()) { #expect(p[i].local < p[j].local) }
            let slopes = zip(h, h.dropFirst()).map { Double(p[$1].out - p[$0].out) / Double(p[$1].local - p[$0].local) }
            for (s, t) in zip(slopes, slopes.dropFirst()) { #expect(s < t) }
            for point in p {
                // The chain's height at this point's time.
                guard let k = zip(h, h.dropFirst()).first(where: { p[$0].local <= point.local && point.local <= p[$1].local }) else {
                    #expect(h.count == 1 || point.local == p[h[0]].local)
                    continue
                }
                let (a, b) = (p[k.0], p[k.1])
                let line = Double(a.out) + Double(b.out - a.out) * Double(point.local - a.local) / Double(b.local - a.local)
                #expect(Double(point.out) >= line - 1e-9)
            }
        }
    }
}
