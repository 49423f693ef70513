import LockstepSimKit
import Testing

@testable import LockstepCore

/// A group above the dense size: each node measures a grid's row and column, reaches the others
/// through them, and keeps them reachable on their word.
@Suite("Sparse clock mesh", .tags(.simulation))
struct SparseMeshTests {
    let s = Nanos.second, ms = Nanos.millisecond

    /// Peers host `i` sent `kind` datagrams to after true time `from` (clock requests, not probes; or reports).
    func destinations(_ sim: GroupSimulation, _ i: Int, from: Int64, reports: Bool) -> Set<PeerID> {
        var out = Set<PeerID>()
        for entry in sim.hosts[i].log where entry.time >= from {
            let to: Endpoint
            switch entry.directive {
            case .sendClockRequest(let ex, let e, _) where ex != 0 && !reports: to = e
            case .send(.clockReport, let e) where reports: to = e
            default: continue
            }
            if let j = sim.hosts.firstIndex(where: { $0.endpoint == to }) { out.insert(sim.peer(j)) }
        }
        return out
    }

    @Test("12 hosts: each measures and reports to 5 peers, reaches the other 6 in two hops within honest bounds, and all stay reachable")
    func twelve() {
        var sim = GroupSimulation(hosts: 12, seed: 1)
        sim.run(for: 12 * s)
        let from = sim.now
        var composed = 0, direct = 0, covered = 0, total = 0
        var worst = 0.0
        for _ in 0..<10 {
            sim.run(for: 1 * s)
            for i in 0..<12 {
                #expect(sim.hosts[i].node.membership.reachable.count == 11, "host \(i) reaches every other")
                for j in 0..<12 where j != i {
                    guard let e = sim.resolvedError(i, of: j) else {
                        Issue.record("host \(i) has no estimate of host \(j)")
                        continue
                    }
                    total += 1
                    if e.direct { direct += 1 } else { composed += 1 }
                    if e.error.magnitude <= e.bound { covered += 1 }
                    if !e.direct { worst = max(worst, e.error.magnitude) }
                }
            }
        }
        for i in 0..<12 {
            let measured = sim.hosts[i].node.clocks.measured
            #expect(measured.count == 5)
            #expect(destinations(sim, i, from: from, reports: false) == measured, "host \(i) asks only the peers it measures")
            #expect(destinations(sim, i, from: from, reports: true) == measured, "host \(i) reports only to the peers it measures")
        }
        #expect(direct == 10 * 12 * 5)
        #expect(composed == 10 * 12 * 6)
        #expect(Double(covered) >= 0.99 * Double(total), "\(covered) of \(total) errors within their bounds")
        #expect(worst < 5_000, "composed paths within 5 µs of the truth (worst \(worst) ns)")
    }

    /// All sightings arrive before any datagram (a group that appears at once): more than the
    /// stranger budget, so the first ones give way. They must still report: otherwise peers whose
    /// only paths go through them stay unresolved, and players there are never told a command
    /// anchored on such a peer's clock.
    @Test("32 hosts appearing at once, twice the stranger budget: every node resolves every other's clock")
    func groupAppearingAtOnceResolvesEveryone() {
        var sim = GroupSimulation(hosts: 32, seed: 3)
        sim.run(for: 8 * s)
        var missing: [String] = []
        for i in 0..<32 {
            for j in 0..<32 where j != i && sim.resolvedError(i, of: j) == nil { missing.append("\(i)→\(j)") }
        }
        #expect(missing.isEmpty, "no estimate for \(missing.count) pairs: \(missing.prefix(10))")
    }

    @Test("a host that goes silent is lost by everyone, also by those that do not measure it, within vouchedLostAfter and a report")
    func silentHostIsLost() {
        var sim = GroupSimulation(hosts: 12, seed: 5)
        sim.run(for: 12 * s)
        let gone = 9
        let others = (0..<12).filter { $0 != gone }
        let indirect = others.filter { !sim.hosts[$0].node.clocks.measured.contains(sim.peer(gone)) }
        #expect(indirect.count == 6)
        let cutAt = sim.now
        sim.partition([gone], others)
        var lostAt: [Int: Int64] = [:]
        for _ in 0..<120 {
            sim.run(for: 100 * ms)
            for i in others where lostAt[i] == nil && !sim.hosts[i].node.membership.isReachable(sim.peer(gone)) { lostAt[i] = sim.now - cutAt }
        }
        #expect(lostAt.count == 11)
        for i in others {
            let limit = indirect.contains(i) ? 11 * s : 3 * s + 100 * ms
            #expect((lostAt[i] ?? .max) <= limit, "host \(i) lost it after \(Double(lostAt[i] ?? -1) / 1e9) s")
        }
        // The others still reach each other.
        for i in others { #expect(sim.hosts[i].node.membership.reachable.count == 10) }
    }
}
