@testable import LockstepCore
import LockstepSimKit
import Testing

/// ``Quickselect`` alone, against sorting.
@Suite("Quickselect")
struct QuickselectTests {
    @Test("the k-th smallest is what sorting puts at k, for every k, duplicates included")
    func againstSorting() {
        var rng = SplitMix64(seed: 11)
        for _ in 0..<100 {
            let n = 1 + Int(rng.unit() * 60)
            // Few distinct values, so that pivots often meet their equals.
            let values = ContiguousArray((0..<n).map { _ in Double(Int(rng.unit() * 10)) - 5 })
            let sorted = values.sorted()
            for k in 0..<n {
                var v = values
                #expect(Quickselect.select(&v, k: k) == sorted[k])
                // Partitioned around k, and nothing lost.
                #expect(v[..<k].allSatisfy { $0 <= sorted[k] } && v[(k + 1)...].allSatisfy { $0 >= sorted[k] })
                #expect(v.sorted() == sorted)
            }
        }
    }

    @Test("sorted, reversed and constant inputs")
    func orderedInputs() {
        var up = ContiguousArray((0..<100).map(Double.init))
        #expect(Quickselect.select(&up, k: 37) == 37)
        var down = ContiguousArray((0..<100).reversed().map(Double.init))
        #expect(Quickselect.select(&down, k: 0) == 0)
        var same = ContiguousArray(repeating: 2.5, count: 9)
        #expect(Quickselect.select(&same, k: 4) == 2.5)
        var one: ContiguousArray<Double> = [-1]
        #expect(Quickselect.select(&one, k: 0) == -1)
    }
}
