import LockstepSimKit
import Testing

@testable import LockstepCore

/// `peer_addresses` (peer protocol §4.4a) in a simulated group: a device that DNS-SD has shown
/// one member reaches the whole group through that member's word.
@Suite("Peer addresses", .tags(.simulation))
struct PeerAddressesTests {
    let s = Nanos.second, ms = Nanos.millisecond

    @Test("12 devices that DNS-SD showed only one member each reach every other within 50 ms: the member passes on where the others are")
    func oneSightingReachesAll() {
        let n = 12
        var sim = GroupSimulation(hosts: n, seed: 3, discovered: false)
        for i in 1..<n { sim.see(i, 0) }
        sim.run(for: 50 * ms)
        for i in 0..<n {
            #expect(sim.hosts[i].node.membership.reachable.count == n - 1, "host \(i) reaches \(sim.hosts[i].node.membership.reachable.count) of \(n - 1)")
        }
        // Every device was told by host 0 and by the devices that met it: one message each,
        // no more than a pair's worth of traffic per device met.
        let sent = sim.hosts.map { h in h.log.count { if case .send(.peerAddresses, _) = $0.directive { true } else { false } } }
        #expect(sent.reduce(0, +) <= n * (n - 1))
        sim.run(for: 5 * s)
        for i in 0..<n { #expect(sim.hosts[i].node.membership.reachable.count == n - 1, "host \(i) stays in the whole group") }
    }

    @Test("a device that comes back from lost is not told the addresses again")
    func onlyNewcomersAreTold() {
        var sim = GroupSimulation(hosts: 3, seed: 4)
        sim.run(for: 2 * s)
        func told(since: Int64) -> Int {
            sim.hosts.map { h in h.log.count { entry in
                guard entry.time >= since, case .send(.peerAddresses, _) = entry.directive else { return false }
                return true
            } }.reduce(0, +)
        }
        #expect(told(since: 0) >= 1, "each device was told of the others when first met (unless it was met first)")
        let cutAt = sim.now
        sim.partition([0, 1], [2])
        sim.run(for: 5 * s)
        sim.heal()
        sim.run(for: 2 * s)
        #expect(sim.hosts[0].node.membership.isReachable(sim.peer(2)))
        #expect(sim.hosts[2].node.membership.isReachable(sim.peer(0)))
        #expect(told(since: cutAt) == 0, "back from lost: not told again")
    }
}
