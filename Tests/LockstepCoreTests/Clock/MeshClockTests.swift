import LockstepCore
import LockstepSimKit
import Testing

extension ClockNetwork {
    /// Error of a resolved offset of b, as host a has it, against the truth.
    func error(_ a: Int, _ b: Int, _ r: MeshClock.ResolvedOffset) -> Double {
        r.estimate.offset(at: local(a, at: now)) - trueOffset(of: b, relativeTo: a, at: now)
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

@Suite("Mesh clock", .tags(.simulation))
struct MeshClockTests {
    static let a = PeerID(high: 0, low: 0xA)
    static let b = PeerID(high: 0, low: 0xB)
    static let c = PeerID(high: 0, low: 0xC)

    static let vetted = MeshClock.Reporter(vetted: true, host: "10.0.0.2")

    static func report(offset: Double, bound: Double, at t: Int64) -> ReportedEstimate {
        ReportedEstimate(reference: PeerTime(ns: t), offsetNs: offset, errorBoundNs: bound, hardBoundNs: 10 * bound, delay: .microseconds(50))
    }

    static func estimate(offset: Double, bound: Double = 1_000, at t: Int64 = 0) -> ClockEstimate {
        ClockEstimate(reference: LocalTime(ns: t), offsetNs: offset, errorBoundNs: bound, hardBoundNs: 10 * bound, delay: .microseconds(50))
    }

    @Test("offsets around a triangle close: every link is direct, trusted, and within tolerance")
    func triangleCloses() {
        var net = ClockNetwork(clocks: Array(meshClocks.prefix(3)), link: .veth, seed: 31)
        var checked = 0
        net.run(until: 30 * Nanos.second, every: 100 * Nanos.millisecond) { net in
            guard net.now >= 10 * Nanos.second else { return }
            for a in 0..<3 {
                for b in 0..<3 where a != b {
                    guard let r = net.resolved(a, of: b) else {
                        Issue.record("no estimate \(a)→\(b)")
                        continue
                    }
                    #expect(r.source == .direct)
                    #expect(r.trusted)
                    #expect(r.pathCount == 1)
                    #expect(r.worstClosureErrorNs! <= r.worstClosureToleranceNs!)
                    #expect(r.worstClosureErrorNs! < 2_000)
                    #expect(net.error(a, b, r).magnitude < 2_000)
                    checked += 1
                }
            }
        }
        #expect(checked > 1_000)
    }

    @Test("a link with a hidden asymmetry is caught by the two-hop paths and replaced by the best of them")
    func hiddenAsymmetryReplaced() {
        var net = ClockNetwork(clocks: meshClocks, link: .veth, seed: 32)
        net.setLink(0, 1, hiddenAsymmetry)
        var replaced = 0, observations = 0
        net.run(until: 30 * Nanos.second, every: 100 * Nanos.millisecond) { net in
            guard net.now >= 10 * Nanos.second else { return }
            observations += 1
            // The direct estimate of host 1 is off by ~200 µs, the two other paths agree.
            let direct = net.estimate(0, of: 1)!
            let directError = direct.offsetNs - net.trueOffset(of: 1, relativeTo: 0, at: net.now)
            #expect((directError - 200_000).magnitude < 5_000)
            for (a, b) in [(0, 1), (1, 0)] {
                let r = net.resolved(a, of: b)!
                #expect(r.pathCount == 2)
                #expect(r.disagreeingPaths == 2)
                #expect((r.closureErrorNs! - 200_000).magnitude < 5_000)
                #expect(r.worstClosureToleranceNs! < 20_000)
                if case .via(let c) = r.source, c == ClockNetwork.id(2) || c == ClockNetwork.id(3), r.trusted {
                    replaced += 1
                    #expect(net.error(a, b, r).magnitude < 5_000)
                    #expect(net.error(a, b, r).magnitude <= r.estimate.errorBoundNs)
                }
            }
            // The other links stay direct: each has one path through the bad link, one not.
            for (a, b) in [(0, 2), (0, 3), (1, 2), (2, 3)] {
                let r = net.resolved(a, of: b)!
                #expect(r.source == .direct)
                #expect(r.trusted)
                #expect(r.disagreeingPaths <= 1)
                #expect(net.error(a, b, r).magnitude < 2_000)
            }
        }
        #expect(replaced == 2 * observations)
    }

    @Test("in a triangle a disagreement cannot be pinned on one link: the direct estimate is kept, untrusted")
    func triangleCannotAttribute() {
        var net = ClockNetwork(clocks: Array(meshClocks.prefix(3)), link: .veth, seed: 33)
        net.setLink(0, 1, hiddenAsymmetry)
        net.run(until: 30 * Nanos.second, every: 100 * Nanos.millisecond) { net in
            guard net.now >= 10 * Nanos.second else { return }
            for (a, b) in [(0, 1), (0, 2), (1, 2)] {
                let r = net.resolved(a, of: b)!
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
                from: Self.b, Self.vetted, target: Self.c,
                estimate: Self.report(offset: -2_000_000, bound: 3_000, at: 1_000_000_000), receivedAt: LocalTime(ns: 0)
            ) == .stored
        )
        let r = mesh.resolved(peer: Self.c, at: LocalTime(ns: 0))!
        #expect(r.source == .via(Self.b))
        #expect(r.estimate.offsetNs == 3_000_000)
        #expect(r.estimate.errorBoundNs == (1_000.0 * 1_000 + 3_000 * 3_000).squareRoot(), "two links' independent errors: √(1² + 3²) µs, not 4")
        #expect(r.estimate.hardBoundNs == 40_000, "hard bounds add")
        #expect(r.closureErrorNs == nil)
        #expect(r.trusted)
    }

    @Test("a peer reached only through paths gets the agreeing paths averaged by 1/bound², the statistical bound that of an average of independent errors and the hard bound averaged alike; a contradicting path is left out and marks it untrusted")
    func pathsCombined() {
        let d = PeerID(high: 0, low: 0xD), e = PeerID(high: 0, low: 0xE)
        var mesh = MeshClock(localID: Self.a)
        for peer in [Self.b, Self.c, e] { mesh.updateLocal(peer: peer, estimate: Self.estimate(offset: 0, bound: 1_000)) }
        let t = LocalTime(ns: 0)
        // Through B: +3 µs ± √2 µs (√(1² + 1²)); through C: 0 ± √5 µs (√(1² + 2²)).
        // Weights 1/2 and 1/5.
        _ = mesh.updateReport(from: Self.b, .init(vetted: true, host: "10.0.0.2"), target: d, estimate: Self.report(offset: 3_000, bound: 1_000, at: 0), receivedAt: t)
        _ = mesh.updateReport(from: Self.c, .init(vetted: true, host: "10.0.0.3"), target: d, estimate: Self.report(offset: 0, bound: 2_000, at: 0), receivedAt: t)
        var r = mesh.resolved(peer: d, at: t)!
        let bb = 2.0.squareRoot() * 1_000, bc = 5.0.squareRoot() * 1_000
        let wb = (1 / 2e6) / (1 / 2e6 + 1 / 5e6), wc = 1 - wb
        #expect(r.combinedPaths == 2)
        #expect(r.source == .via(Self.b))
        #expect(abs(r.estimate.offsetNs - 3_000 * wb) < 1e-6)
        #expect(abs(r.estimate.errorBoundNs - ((wb * bb) * (wb * bb) + (wc * bc) * (wc * bc)).squareRoot()) < 1e-6)
        #expect(r.estimate.errorBoundNs < bb, "two independent paths together are tighter than the better one")
        #expect(abs(r.estimate.hardBoundNs - (wb * 20_000 + wc * 30_000)) < 1e-6, "hard bounds: the weighted mean, which holds for any errors")
        #expect(r.trusted)
        // Through E: −20 µs ± 2 µs, contradicting B's path.
        _ = mesh.updateReport(from: e, .init(vetted: true, host: "10.0.0.5"), target: d, estimate: Self.report(offset: -20_000, bound: 1_000, at: 0), receivedAt: t)
        r = mesh.resolved(peer: d, at: t)!
        #expect(r.pathCount == 3)
        #expect(r.combinedPaths == 2, "B's and C's paths, not E's")
        #expect(!r.trusted)
    }

    /// The asymmetry scale of closures of 2 µs between estimates bounded by 1 µs (direct) and √2 µs
    /// (a path of two 1 µs links): what is left of 2 µs once their noise, (1 + 2) µs² / 4.5², is
    /// taken out.
    static let twoMicrosecondScale = (2_000.0 * 2_000 - (1_000.0 * 1_000 + 2 * 1_000 * 1_000) / (4.5 * 4.5)).squareRoot()

    @Test("bounds are widened by what this node's triangles' closures hold beyond their noise, once per link on the path, never past the hard bound")
    func asymmetryWidensBounds() {
        var mesh = MeshClock(localID: Self.a)
        let t = LocalTime(ns: 0)
        let d = PeerID(high: 0, low: 0xD)
        var tightHard = Self.estimate(offset: 0, bound: 1_000)
        tightHard.hardBoundNs = 2_500
        mesh.updateLocal(peer: Self.b, estimate: tightHard)
        mesh.updateLocal(peer: Self.c, estimate: Self.estimate(offset: 2_000, bound: 1_000))
        #expect(mesh.asymmetryScaleNs(at: t) == nil)
        #expect(mesh.resolved(peer: Self.c, at: t)?.estimate.errorBoundNs == 1_000, "no triangle yet: no evidence either way")
        // B sees C at 0, C sees B at 0: both triangles miss by 2 µs.
        _ = mesh.updateReport(from: Self.b, .init(vetted: true, host: "10.0.0.2"), target: Self.c, estimate: Self.report(offset: 0, bound: 1_000, at: 0), receivedAt: t)
        _ = mesh.updateReport(from: Self.c, .init(vetted: true, host: "10.0.0.3"), target: Self.b, estimate: Self.report(offset: 0, bound: 1_000, at: 0), receivedAt: t)
        _ = mesh.updateReport(from: Self.b, .init(vetted: true, host: "10.0.0.2"), target: d, estimate: Self.report(offset: 0, bound: 1_000, at: 0), receivedAt: t)
        let scale = Self.twoMicrosecondScale
        #expect(abs(mesh.asymmetryScaleNs(at: t)! - scale) < 1e-6)
        #expect(scale > 1_950 && scale < 2_000, "a closure far beyond its noise counts almost whole")
        let c = mesh.resolved(peer: Self.c, at: t)!
        #expect(abs(c.estimate.errorBoundNs - (1_000 + scale)) < 1e-6)
        #expect(abs(c.asymmetryNs - scale) < 1e-6)
        #expect(mesh.resolved(peer: Self.b, at: t)?.estimate.errorBoundNs == 2_500, "capped by the hard bound, which holds for any asymmetry")
        let viaB = mesh.resolved(peer: d, at: t)!
        #expect(viaB.source == .via(Self.b))
        #expect(abs(viaB.estimate.errorBoundNs - 2.0.squareRoot() * (1_000 + scale)) < 1e-6, "two links' independent asymmetries: √2 times the scale")
        #expect(abs(viaB.asymmetryNs - 2.0.squareRoot() * scale) < 1e-6)
    }

    @Test("a conversion's estimate is the resolved one before widening: the same offset, skew and instants, directly and over two hops, only its bound narrower")
    func checkedConvertsAsResolved() {
        var mesh = MeshClock(localID: Self.a)
        let t = LocalTime(ns: 0)
        let d = PeerID(high: 0, low: 0xD)
        mesh.updateLocal(peer: Self.b, estimate: Self.estimate(offset: 500, bound: 1_000))
        mesh.updateLocal(peer: Self.c, estimate: Self.estimate(offset: 2_000, bound: 1_000))
        _ = mesh.updateReport(from: Self.b, .init(vetted: true, host: "10.0.0.2"), target: Self.c, estimate: Self.report(offset: 0, bound: 1_000, at: 0), receivedAt: t)
        _ = mesh.updateReport(from: Self.c, .init(vetted: true, host: "10.0.0.3"), target: Self.b, estimate: Self.report(offset: 0, bound: 1_000, at: 0), receivedAt: t)
        _ = mesh.updateReport(from: Self.b, .init(vetted: true, host: "10.0.0.2"), target: d, estimate: Self.report(offset: 300, bound: 1_000, at: 0), receivedAt: t)
        _ = mesh.updateReport(from: Self.c, .init(vetted: true, host: "10.0.0.3"), target: d, estimate: Self.report(offset: -1_200, bound: 1_000, at: 0), receivedAt: t)
        #expect(mesh.asymmetryScaleNs(at: t) != nil, "the closures widen: the two differ in their bounds")
        let later = t + .milliseconds(40)
        for peer in [Self.b, Self.c, d] {
            let resolved = mesh.resolved(peer: peer, at: later)!.estimate
            let checked = mesh.checked(peer: peer, at: later)!.estimate
            #expect(checked.offsetNs == resolved.offsetNs && checked.skewPPM == resolved.skewPPM)
            let instant = resolved.peerTime(at: later + .seconds(3))
            #expect(checked.localTime(at: instant) == resolved.localTime(at: instant))
            #expect(checked.errorBoundNs < resolved.errorBoundNs)
        }
        #expect(mesh.checked(peer: d, at: later)!.source == mesh.resolved(peer: d, at: later)!.source)
    }

    @Test("the asymmetry scale, read once per instant, follows every change at that instant, and a changed copy never shows the original its own")
    func asymmetryScaleFollowsChangesAndCopies() {
        let t = LocalTime(ns: 0)
        var mesh = MeshClock(localID: Self.a)
        mesh.updateLocal(peer: Self.b, estimate: Self.estimate(offset: 0, bound: 1_000))
        mesh.updateLocal(peer: Self.c, estimate: Self.estimate(offset: 2_000, bound: 1_000))
        _ = mesh.updateReport(from: Self.b, .init(vetted: true, host: "10.0.0.2"), target: Self.c, estimate: Self.report(offset: 0, bound: 1_000, at: 0), receivedAt: t)
        _ = mesh.updateReport(from: Self.c, .init(vetted: true, host: "10.0.0.3"), target: Self.b, estimate: Self.report(offset: 0, bound: 1_000, at: 0), receivedAt: t)
        #expect(abs(mesh.asymmetryScaleNs(at: t)! - Self.twoMicrosecondScale) < 1e-6)

        // A copy whose estimate of C now closes both triangles: nothing beyond the noise.
        var copy = mesh
        copy.updateLocal(peer: Self.c, estimate: Self.estimate(offset: 0, bound: 1_000))
        #expect(copy.asymmetryScaleNs(at: t) == 0, "the copy's own closures, at the instant already read")
        #expect(abs(mesh.asymmetryScaleNs(at: t)! - Self.twoMicrosecondScale) < 1e-6, "the original's, not the copy's")
        #expect(abs(mesh.resolved(peer: Self.c, at: t)!.estimate.errorBoundNs - (1_000 + Self.twoMicrosecondScale)) < 1e-6)
        #expect(copy.resolved(peer: Self.c, at: t)?.estimate.errorBoundNs == 1_000)

        // Forgetting C leaves no triangle: no evidence either way, at the same instant.
        mesh.removePeer(Self.c)
        #expect(mesh.asymmetryScaleNs(at: t) == nil)
    }

    @Test("closures within their own noise widen nothing: the links' noise is not counted twice; a delay step's bound is not taken for noise")
    func closuresWithinNoiseWidenNothing() {
        func mesh(closure: Double, step: TimeSpan = .zero) -> MeshClock {
            var mesh = MeshClock(localID: Self.a)
            var toB = Self.estimate(offset: 0, bound: 1_000)
            toB.delayStep = step
            mesh.updateLocal(peer: Self.b, estimate: toB)
            mesh.updateLocal(peer: Self.c, estimate: Self.estimate(offset: closure, bound: 1_000))
            let t = LocalTime(ns: 0)
            _ = mesh.updateReport(from: Self.b, .init(vetted: true, host: "10.0.0.2"), target: Self.c, estimate: Self.report(offset: 0, bound: 1_000, at: 0), receivedAt: t)
            _ = mesh.updateReport(from: Self.c, .init(vetted: true, host: "10.0.0.3"), target: Self.b, estimate: Self.report(offset: 0, bound: 1_000, at: 0), receivedAt: t)
            return mesh
        }
        let t = LocalTime(ns: 0)
        // The closures' noise: σ = √3 µs / 4.5 = 385 ns.
        #expect(mesh(closure: 300).asymmetryScaleNs(at: t) == 0, "300 ns: within one σ")
        #expect(mesh(closure: 300).resolved(peer: Self.c, at: t)?.estimate.errorBoundNs == 1_000, "nothing widened")
        #expect(abs(mesh(closure: 600).asymmetryScaleNs(at: t)! - (600.0 * 600 - 3e6 / (4.5 * 4.5)).squareRoot()) < 1e-6, "600 ns: what exceeds the noise")
        #expect(mesh(closure: 300, step: .microseconds(5)).asymmetryScaleNs(at: t) == 300, "a delay step's bound holds a bias, not noise: the closure counts whole")
    }

    @Test("in a group of symmetric links the triangles' closures are mostly their noise, and widen the bounds by far less than the closures; a hidden asymmetry still widens the bounds of its link's ends")
    func symmetricLinksWidenLittle() {
        var plain = ClockNetwork(clocks: meshClocks, link: .veth, seed: 34)
        var skewed = ClockNetwork(clocks: meshClocks, link: .veth, seed: 34)
        // 20 µs more one way than the other on the link 0–1: a 10 µs bias, which 4 of the 6
        // closures of hosts 0 and 1 hold (2 of 6 at hosts 2 and 3: not their median).
        skewed.setLink(0, 1, LinkModel(forward: LegModel(baseNs: 40_000, jitter: .exponential(meanNs: 3_000)), backward: .veth))
        func medianClosure(_ net: ClockNetwork, _ a: Int) -> Double {
            let mesh = net.hosts[a].clocks.mesh, t = net.local(a, at: net.now)
            var closures: [Double] = []
            for b in 0..<4 where b != a {
                let direct = net.estimate(a, of: b)!.offsetNs
                for path in mesh.paths(to: ClockNetwork.id(b), at: t) { closures.append((direct - path.estimate.offsetNs).magnitude) }
            }
            closures.sort()
            return (closures[2] + closures[3]) / 2
        }
        var looks = 0, widened = 0, scales = 0.0, closures = 0.0, seen: [Double] = []
        plain.run(until: 30 * Nanos.second, every: 500 * Nanos.millisecond) { net in
            guard net.now >= 10 * Nanos.second else { return }
            looks += 1
            for a in 0..<4 {
                let scale = net.hosts[a].clocks.mesh.asymmetryScaleNs(at: net.local(a, at: net.now))!
                if scale > 0 { widened += 1 }
                scales += scale
                closures += medianClosure(net, a)
            }
        }
        skewed.run(until: 30 * Nanos.second, every: 500 * Nanos.millisecond) { net in
            guard net.now >= 10 * Nanos.second else { return }
            for a in 0..<2 { seen.append(net.hosts[a].clocks.mesh.asymmetryScaleNs(at: net.local(a, at: net.now))!) }
        }
        #expect(looks == 41)
        #expect(widened < looks, "\(widened) of \(4 * looks) looks widened symmetric links (seed 34: 13)")
        #expect(scales < closures / 4, "seed 34: 48 ns against 433; mean scale \(scales / Double(4 * looks)) ns against a mean median closure of \(closures / Double(4 * looks)) ns")
        #expect(seen.min()! > 8_000 && seen.max()! < 12_000, "the ends of the biased link see its 10 µs: \(seen.min()!)…\(seen.max()!) ns")
    }

    @Test("paths averaged through different addresses are widened less for asymmetry, and bounded tighter, than one path; paths through one address count as one")
    func averagedPathsByAddress() {
        let d = PeerID(high: 0, low: 0xD), t = LocalTime(ns: 0)
        func mesh(cHost: String) -> MeshClock {
            var mesh = MeshClock(localID: Self.a)
            mesh.updateLocal(peer: Self.b, estimate: Self.estimate(offset: 0, bound: 1_000))
            mesh.updateLocal(peer: Self.c, estimate: Self.estimate(offset: 2_000, bound: 1_000))
            let b = MeshClock.Reporter(vetted: true, host: "10.0.0.2"), c = MeshClock.Reporter(vetted: true, host: cHost)
            // Triangles that miss by 2 µs: the asymmetry scale.
            _ = mesh.updateReport(from: Self.b, b, target: Self.c, estimate: Self.report(offset: 0, bound: 1_000, at: 0), receivedAt: t)
            _ = mesh.updateReport(from: Self.c, c, target: Self.b, estimate: Self.report(offset: 0, bound: 1_000, at: 0), receivedAt: t)
            // D through B (0 ± √2 µs) and through C (2 µs ± √2 µs): equal weights.
            _ = mesh.updateReport(from: Self.b, b, target: d, estimate: Self.report(offset: 0, bound: 1_000, at: 0), receivedAt: t)
            _ = mesh.updateReport(from: Self.c, c, target: d, estimate: Self.report(offset: 0, bound: 1_000, at: 0), receivedAt: t)
            return mesh
        }
        let apart = mesh(cHost: "10.0.0.3").resolved(peer: d, at: t)!
        #expect(apart.combinedPaths == 2)
        #expect(abs(apart.estimate.offsetNs - 1_000) < 1e-6)
        #expect(abs(apart.asymmetryFactor - 1) < 1e-9, "√(2 × (½² + ½²)): four links' biases averaged")
        #expect(abs(apart.estimate.errorBoundNs - (1_000 + Self.twoMicrosecondScale)) < 1e-6, "√2 µs / √2, plus the scale once")
        let together = mesh(cHost: "10.0.0.2").resolved(peer: d, at: t)!
        #expect(together.combinedPaths == 2)
        #expect(abs(together.asymmetryFactor - 2.0.squareRoot()) < 1e-9, "one address: as one path")
        #expect(abs(together.estimate.errorBoundNs - 2.0.squareRoot() * (1_000 + Self.twoMicrosecondScale)) < 1e-6, "one address: the bounds add")
    }

    @Test("reports about ourselves, from strangers, or over the caps are ignored; old ones expire")
    func reportHygiene() {
        var mesh = MeshClock(
            localID: Self.a, configuration: .init(reportLifetime: .seconds(1), maxReportsPerReporter: 2, maxUnknownTargets: 1)
        )
        let e = Self.estimate(offset: 0)
        let r = ReportedEstimate(reporting: e)
        let zero = LocalTime(ns: 0)
        #expect(mesh.updateReport(from: Self.b, Self.vetted, target: Self.c, estimate: r, receivedAt: zero) == .ignoredUnknownReporter)
        mesh.updateLocal(peer: Self.b, estimate: e)
        #expect(mesh.updateReport(from: Self.b, Self.vetted, target: Self.a, estimate: r, receivedAt: zero) == .ignoredSelf)
        #expect(mesh.updateReport(from: Self.b, Self.vetted, target: Self.b, estimate: r, receivedAt: zero) == .ignoredSelf)
        #expect(mesh.updateReport(from: Self.b, Self.vetted, target: Self.c, estimate: r, receivedAt: zero) == .stored)
        let d = PeerID(high: 0, low: 0xD)
        #expect(mesh.updateReport(from: Self.b, Self.vetted, target: d, estimate: r, receivedAt: zero) == .ignoredOverCapacity)
        mesh.updateLocal(peer: d, estimate: e)
        #expect(mesh.updateReport(from: Self.b, Self.vetted, target: d, estimate: r, receivedAt: zero) == .stored)
        #expect(mesh.updateReport(from: Self.b, Self.vetted, target: PeerID(high: 0, low: 0xE), estimate: r, receivedAt: zero) == .ignoredOverCapacity)
        #expect(mesh.paths(to: Self.c, at: LocalTime(ns: 500_000_000)).count == 1)
        #expect(mesh.paths(to: Self.c, at: LocalTime(ns: 1_000_000_000)).isEmpty)
        mesh.expire(at: LocalTime(ns: 2_000_000_000))
        #expect(mesh.updateReport(from: Self.b, Self.vetted, target: PeerID(high: 0, low: 0xE), estimate: r, receivedAt: LocalTime(ns: 2_000_000_000)) == .stored)
        mesh.removePeer(Self.b)
        #expect(mesh.directEstimates[Self.b] == nil)
        #expect(mesh.paths(to: PeerID(high: 0, low: 0xE), at: LocalTime(ns: 2_000_000_000)).isEmpty)
    }
}
