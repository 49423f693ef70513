import LockstepSimKit
import Testing

@testable import LockstepCore

/// Addresses that only a peer's own datagrams gave (no DNS-SD, no configuration) stay validated
/// for as long as the peer is reachable, measured directly or reached through the mesh: the shell
/// holds what goes to an unvalidated address to its anti-amplification budget, so a lapsed
/// validation would throttle a healthy member.
@Suite("Revalidation", .tags(.simulation))
struct RevalidationTests {
    let s = Nanos.second

    @Test("in a sparse mesh of 10 devices that DNS-SD showed one member, every reachable peer's address stays validated through three lifetimes of a validation, for one probe per unmeasured pair per half lifetime")
    func learnedAddressesStayValidated() {
        let n = 10, validFor: Int64 = 60
        var sim = GroupSimulation(hosts: n, seed: 5, discovered: false) { $0.paths.validFor = .seconds(validFor) }
        for i in 1..<n { sim.see(i, 0) }
        var unmeasured = 0
        for t in [validFor / 2, 2 * validFor, 3 * validFor + 7] {
            sim.run(until: t * s)
            for i in 0..<n {
                let node = sim.hosts[i].node, now = sim.local(i)
                #expect(node.membership.reachable.count == n - 1, "\(t) s: host \(i) reaches \(node.membership.reachable.count) of \(n - 1)")
                for peer in node.membership.reachable {
                    guard let to = node.membership.endpoint(of: peer) else { continue }
                    let validated = node.isValidated(to, now: now)
                    #expect(validated, "\(t) s: host \(i)'s address for \(peer) is not validated")
                    if !node.clocks.measured.contains(peer) { unmeasured += 1 }
                }
            }
        }
        #expect(unmeasured > 0, "some pairs are reached through the mesh only (not measured): those are the ones at stake")
        // Probes sent after the first quarter lifetime (the group has met): only revalidations
        // here (no alternate paths to probe). Half the pairs are unmeasured, each challenged
        // once per half lifetime: about 3 per ordered pair over the run; a probe at every look
        // (every twentieth of a lifetime) would be about 30.
        let probes = sim.hosts.map { h in h.log.count { e in
            guard e.time > validFor * s / 4, case .sendClockRequest(0, _, _) = e.directive else { return false }
            return true
        } }
        let perPair = Double(probes.reduce(0, +)) / Double(n * (n - 1))
        #expect(perPair < 4, "one challenge per unmeasured pair per half lifetime (\(perPair) per ordered pair over \(3 * validFor) s)")
    }
}
