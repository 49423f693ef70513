import Testing

@testable import LockstepCore

/// Which peers a node measures: all in a small group, a grid's row and column in a large one.
@Suite("Clock neighbours")
struct ClockNeighboursTests {
    static func ids(_ n: Int) -> [PeerID] {
        var g = SplitMix64(seed: UInt64(n))
        return (0..<n).map { _ in PeerID.random(using: &g) }
    }

    @Test("up to the dense size every peer is measured")
    func dense() {
        let ids = Self.ids(9)
        let n = ClockNeighbours(denseUpTo: 8)
        #expect(n.measured(by: ids[0], among: Set(ids)) == Set(ids.dropFirst()))
    }

    @Test("above it, links are symmetric, every device is at most two hops away, and a node measures about 2(√n − 1) peers", arguments: [10, 16, 17, 31, 32, 50, 64, 65])
    func grid(devices: Int) {
        let ids = Self.ids(devices)
        let rule = ClockNeighbours(denseUpTo: 8)
        let all = Set(ids)
        let measured = Dictionary(uniqueKeysWithValues: ids.map { ($0, rule.measured(by: $0, among: all)) })
        let width = ClockNeighbours.width(devices)
        var twoPaths = 0, pairs = 0
        for a in ids {
            #expect(!measured[a]!.contains(a))
            #expect(measured[a]!.count <= 2 * (width - 1))
            for b in ids where b != a {
                #expect(measured[a]!.contains(b) == measured[b]!.contains(a), "links are symmetric")
                guard !measured[a]!.contains(b) else { continue }
                let via = measured[a]!.intersection(measured[b]!)
                #expect(!via.isEmpty, "\(b) is two hops from \(a)")
                pairs += 1
                if via.count >= 2 { twoPaths += 1 }
            }
        }
        // Most devices are reached by two disjoint paths, which cross-check each other.
        #expect(Double(twoPaths) >= 0.6 * Double(pairs), "\(twoPaths) of \(pairs) pairs have two paths")
    }

    @Test("64 devices: each measures 14 peers, not 63")
    func sixtyFour() {
        let ids = Self.ids(64)
        let counts = ids.map { ClockNeighbours().measured(by: $0, among: Set(ids)).count }
        #expect(counts.allSatisfy { $0 == 14 })
    }

    @Test("a node not yet in the set it is given measures as if it were")
    func meIncluded() {
        let ids = Self.ids(20)
        let rule = ClockNeighbours()
        #expect(rule.measured(by: ids[3], among: Set(ids)) == rule.measured(by: ids[3], among: Set(ids).subtracting([ids[3]])))
    }
}
