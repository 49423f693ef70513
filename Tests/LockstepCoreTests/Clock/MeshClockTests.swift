import LockstepCore
import Testing

/// A mesh of simulated hosts that all measure each other (``ClockNetwork``) and gossip their
/// direct estimates once a second; each host keeps a ``MeshClock``.
struct MeshSimulation {
    var net: ClockNetwork
    var meshes: [MeshClock]
    let ids: [PeerID]

    init(clocks: [DeviceClock], link: LinkModel = vethLink, seed: UInt64) {
        net = ClockNetwork(clocks: clocks, link: link, seed: seed)
        ids = clocks.indices.map { PeerID(high: 0x10c0, low: UInt64($0 + 1)) }
        meshes = ids.map { MeshClock(localID: $0) }
    }

    /// Runs until `end`, gossiping every second and calling `observe` every 100 ms (after the
    /// meshes got their hosts' latest direct estimates).
    mutating func run(until end: Int64, observe: (MeshSimulation) -> Void) {
        var t = net.now
        while t < end {
            let next = min(end, t + Nanos.second)
            var meshes = self.meshes
            let ids = self.ids
            net.run(until: next, every: 100 * Nanos.millisecond) { net in
                Self.updateLocal(&meshes, ids, net)
                observe(MeshSimulation(net: net, meshes: meshes, ids: ids))
            }
            self.meshes = meshes
            gossip()
            t = next
        }
    }

    private init(net: ClockNetwork, meshes: [MeshClock], ids: [PeerID]) {
        self.net = net
        self.meshes = meshes
        self.ids = ids
    }

    private static func updateLocal(_ meshes: inout [MeshClock], _ ids: [PeerID], _ net: ClockNetwork) {
        for a in ids.indices {
            for b in ids.indices where a != b {
                if let e = net.estimate(a, of: b) { meshes[a].updateLocal(peer: ids[b], estimate: e) }
            }
        }
    }

    /// Every host sends its direct estimates to every other host.
    mutating func gossip() {
        Self.updateLocal(&meshes, ids, net)
        for reporter in ids.indices {
            for target in ids.indices where target != reporter {
                guard let e = net.estimate(reporter, of: target) else { continue }
                for receiver in ids.indices where receiver != reporter {
                    meshes[receiver].updateReport(
                        from: ids[reporter], target: ids[target], estimate: e,
                        receivedAtLocal: net.local(receiver, atHost: net.now)
                    )
                }
            }
        }
    }

    func resolved(_ a: Int, _ b: Int) -> MeshClock.ResolvedOffset? {
        meshes[a].resolved(peer: ids[b], atLocal: net.local(a, atHost: net.now))
    }

    /// Error of a resolved offset against the truth.
    func error(_ a: Int, _ b: Int, _ r: MeshClock.ResolvedOffset) -> Double {
        r.estimate.offset(atLocal: net.local(a, atHost: net.now)) - net.trueOffset(of: b, relativeTo: a, atHost: net.now)
    }
}

let meshClocks: [DeviceClock] = [
    .identity,
    DeviceClock(offsetNs: 30 * Nanos.second, skewPPM: 200),
    DeviceClock(offsetNs: -30 * Nanos.second, skewPPM: -200),
    DeviceClock(offsetNs: 12 * Nanos.second, skewPPM: 75),
]

/// 400 µs more one way than the other: a 200 µs bias on the link's offset, invisible to it.
let hiddenAsymmetry = LinkModel(forward: LegModel(baseNs: 420_000, jitter: .exponential(meanNs: 3_000)), backward: .veth)

@Suite("Mesh clock")
struct MeshClockTests {
    static let a = PeerID(high: 0, low: 0xA)
    static let b = PeerID(high: 0, low: 0xB)
    static let c = PeerID(high: 0, low: 0xC)

    static func estimate(offset: Double, bound: Double = 1_000, at t: Int64 = 0) -> ClockEstimate {
        ClockEstimate(referenceLocal: t, offsetNs: offset, errorBoundNs: bound, hardBoundNs: 10 * bound, delayNs: 50_000)
    }

    @Test("offsets around a triangle close: every link is direct, trusted, and within tolerance")
    func triangleCloses() {
        var sim = MeshSimulation(clocks: Array(meshClocks.prefix(3)), seed: 31)
        var checked = 0
        sim.run(until: 60 * Nanos.second) { sim in
            guard sim.net.now >= 10 * Nanos.second else { return }
            for a in 0..<3 {
                for b in 0..<3 where a != b {
                    guard let r = sim.resolved(a, b) else {
                        Issue.record("no estimate \(a)→\(b)")
                        continue
                    }
                    #expect(r.source == .direct)
                    #expect(r.trusted)
                    #expect(r.pathCount == 1)
                    #expect(r.worstClosureErrorNs! <= r.worstClosureToleranceNs!)
                    #expect(r.worstClosureErrorNs! < 2_000)
                    #expect(sim.error(a, b, r).magnitude < 2_000)
                    checked += 1
                }
            }
        }
        #expect(checked > 2_000)
    }

    @Test("a link with a hidden asymmetry is caught by the two-hop paths and replaced by the best of them")
    func hiddenAsymmetryReplaced() {
        var sim = MeshSimulation(clocks: meshClocks, seed: 32)
        sim.net.setLink(0, 1, hiddenAsymmetry)
        var replaced = 0, observations = 0
        sim.run(until: 60 * Nanos.second) { sim in
            guard sim.net.now >= 10 * Nanos.second else { return }
            observations += 1
            // The direct estimate of host 1 is off by ~200 µs, the two other paths agree.
            let direct = sim.meshes[0].directEstimates[sim.ids[1]]!.rebased(toLocal: sim.net.local(0, atHost: sim.net.now))
            let directError = direct.offsetNs - sim.net.trueOffset(of: 1, relativeTo: 0, atHost: sim.net.now)
            #expect((directError - 200_000).magnitude < 5_000)
            for (a, b) in [(0, 1), (1, 0)] {
                let r = sim.resolved(a, b)!
                #expect(r.pathCount == 2)
                #expect(r.disagreeingPaths == 2)
                #expect((r.closureErrorNs! - 200_000).magnitude < 5_000)
                #expect(r.worstClosureToleranceNs! < 20_000)
                if case .via(let c) = r.source, c == sim.ids[2] || c == sim.ids[3], r.trusted {
                    replaced += 1
                    #expect(sim.error(a, b, r).magnitude < 5_000)
                    #expect(sim.error(a, b, r).magnitude <= r.estimate.errorBoundNs)
                }
            }
            // The other links stay direct: each has one path through the bad link, one not.
            for (a, b) in [(0, 2), (0, 3), (1, 2), (2, 3)] {
                let r = sim.resolved(a, b)!
                #expect(r.source == .direct)
                #expect(r.trusted)
                #expect(r.disagreeingPaths <= 1)
                #expect(sim.error(a, b, r).magnitude < 2_000)
            }
        }
        #expect(replaced == 2 * observations)
    }

    @Test("in a triangle a disagreement cannot be pinned on one link: the direct estimate is kept, untrusted")
    func triangleCannotAttribute() {
        var sim = MeshSimulation(clocks: Array(meshClocks.prefix(3)), seed: 33)
        sim.net.setLink(0, 1, hiddenAsymmetry)
        sim.run(until: 30 * Nanos.second) { sim in
            guard sim.net.now >= 10 * Nanos.second else { return }
            for (a, b) in [(0, 1), (0, 2), (1, 2)] {
                let r = sim.resolved(a, b)!
                #expect(r.source == .direct)
                #expect(r.trusted == false)
                #expect(r.disagreeingPaths == 1)
            }
        }
    }

    @Test("a report is brought onto the local clock through the reporter's estimate")
    func twoHopOnly() {
        var mesh = MeshClock(localID: Self.a)
        // A's clock t; B = t + 5 ms; C = B − 2 ms, as B reports at B's time 1_000_000_000.
        mesh.updateLocal(peer: Self.b, estimate: Self.estimate(offset: 5_000_000, at: 0))
        #expect(
            mesh.updateReport(
                from: Self.b, target: Self.c, estimate: Self.estimate(offset: -2_000_000, bound: 3_000, at: 1_000_000_000),
                receivedAtLocal: 0
            ) == .stored
        )
        let r = mesh.resolved(peer: Self.c, atLocal: 0)!
        #expect(r.source == .via(Self.b))
        #expect(r.estimate.offsetNs == 3_000_000)
        #expect(r.estimate.errorBoundNs == 4_000)
        #expect(r.closureErrorNs == nil)
        #expect(r.trusted)
    }

    @Test("reports about ourselves, from strangers, or over the caps are ignored; old ones expire")
    func reportHygiene() {
        var mesh = MeshClock(
            localID: Self.a, configuration: .init(reportLifetimeNs: Nanos.second, maxReportsPerReporter: 2, maxUnknownTargets: 1)
        )
        let e = Self.estimate(offset: 0)
        #expect(mesh.updateReport(from: Self.b, target: Self.c, estimate: e, receivedAtLocal: 0) == .ignoredUnknownReporter)
        mesh.updateLocal(peer: Self.b, estimate: e)
        #expect(mesh.updateReport(from: Self.b, target: Self.a, estimate: e, receivedAtLocal: 0) == .ignoredSelf)
        #expect(mesh.updateReport(from: Self.b, target: Self.b, estimate: e, receivedAtLocal: 0) == .ignoredSelf)
        #expect(mesh.updateReport(from: Self.b, target: Self.c, estimate: e, receivedAtLocal: 0) == .stored)
        let d = PeerID(high: 0, low: 0xD)
        #expect(mesh.updateReport(from: Self.b, target: d, estimate: e, receivedAtLocal: 0) == .ignoredOverCapacity)
        mesh.updateLocal(peer: d, estimate: e)
        #expect(mesh.updateReport(from: Self.b, target: d, estimate: e, receivedAtLocal: 0) == .stored)
        #expect(mesh.updateReport(from: Self.b, target: PeerID(high: 0, low: 0xE), estimate: e, receivedAtLocal: 0) == .ignoredOverCapacity)
        #expect(mesh.paths(to: Self.c, atLocal: 500_000_000).count == 1)
        #expect(mesh.paths(to: Self.c, atLocal: 1_000_000_000).isEmpty)
        mesh.expire(atLocal: 2_000_000_000)
        #expect(mesh.updateReport(from: Self.b, target: PeerID(high: 0, low: 0xE), estimate: e, receivedAtLocal: 2_000_000_000) == .stored)
        mesh.removePeer(Self.b)
        #expect(mesh.directEstimates[Self.b] == nil)
        #expect(mesh.paths(to: PeerID(high: 0, low: 0xE), atLocal: 2_000_000_000).isEmpty)
    }
}
