/// Cross-checks the clock estimates of a mesh: every agent measures every peer directly, peers
/// gossip their direct estimates, and offsets around every triangle must add up.
///
/// Terms: the *local* agent is L. A *direct* estimate of peer P is L's own (``ClockEstimator``),
/// on L's clock. A *report* from C about P is C's direct estimate of P, received over gossip; it
/// is on C's clock, and is brought onto L's clock through L's direct estimate of C
/// (``OffsetEstimate/composed(with:at:)``): the *two-hop path* L → C → P. The *closure error*
/// of a path is how far it lands from the direct estimate; its *tolerance* is the sum of the
/// statistical bounds involved (direct + L→C + C→P, each widened for its age).
///
/// Why: a two-way exchange cannot see its own path's asymmetry (it biases the offset by half of
/// it, and the statistical bound assumes it away). Another path through the mesh can. When the
/// direct estimate disagrees with at least ``Configuration/minAgreeingPaths`` two-hop paths that
/// agree among themselves, and with more paths than agree with it, the direct link is distrusted
/// and the best of those paths (smallest bound) is used instead. With a single alternative path
/// (a triangle) a disagreement cannot be pinned on one link: the direct estimate is kept and
/// marked untrusted.
///
/// Reports must carry *direct* measurements (never resolved ones), so that a replaced link does
/// not echo around the mesh. A report is kept for ``Configuration/reportLifetime`` after it was
/// received; reports from agents L does not measure are ignored (their clock cannot be converted),
/// and reports about peers L does not measure are kept for at most
/// ``Configuration/maxUnknownTargets`` such peers. When a peer restarts (new clock epoch), call
/// ``removePeer(_:)`` before giving it a new estimate: reports about its old epoch must go.
///
/// **Sybils.** With one group key, a member can speak under many peer ids from one machine, each
/// answering clock requests and reporting the same forged offset. Two rules keep such a crowd from
/// overruling a direct estimate: only reporters that discovery vouches for (DNS-SD showed them, or
/// they were configured) may report at all (``ReportVerdict/ignoredUnvetted``), and agreeing paths
/// count once per reporter *address*, so many ids on one host are one vote.
///
/// **Asymmetry in the bounds.** The statistical bound assumes each path's minimum delays are the
/// same both ways; the mesh shows how far that fails. The *asymmetry scale* is what the closures
/// of every direct link's two-hop paths hold beyond their own noise (``asymmetryScaleNs(at:)``):
/// a closure adds up three links' biases and the noise of the estimates closing it, and that
/// noise is in their statistical bounds already, so symmetric links widen nothing. Every resolved
/// estimate's bound is widened by it once for a direct estimate, √2 times for a two-hop one, and
/// √(2 Σ Wₐ²) times for an average of paths (Wₐ: the weight of the paths through address a), never
/// past its hard bound, which holds for any asymmetry. Two links' biases add as independent errors
/// (the pairs' biases are unrelated), and the biases of different links average. A bias of one
/// device's own (its receiving slower than its sending) is no link's: it enters a middle device's
/// two links with opposite signs and cancels, and it biases a direct link and every path between
/// the same two ends alike, so no closure shows it (only the hard bound covers it). (On the lab's
/// veth links the biases are fixed per pair, up to about 2 µs, with round trips of 4 µs: the
/// statistical bound alone covered 75 % of readings, the widened one covers them.) Without any
/// closure (a group of two, no reports yet) nothing is widened: there is no evidence either way.
///
/// This is a consistency check, not a network-wide least-squares solution (as in e.g. PTP's
/// boundary clocks or the "Huygens" mesh algorithm); it needs no coordination and tolerates
/// missing reports.
public struct MeshClock: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// How long a report stays usable after it was received.
        public var reportLifetime: TimeSpan
        /// Most targets kept per reporter.
        public var maxReportsPerReporter: Int
        /// Most distinct peers, not measured directly, that reports may be kept about.
        public var maxUnknownTargets: Int
        /// How many mutually agreeing two-hop paths it takes to overrule a direct estimate.
        public var minAgreeingPaths: Int
        /// How many noise scales a statistical bound spans (``ClockEstimator/Configuration/boundSigmas``):
        /// a closure's own noise, taken out of the asymmetry scale, is its bounds divided by it.
        public var boundSigmas: Double

        public init(
            reportLifetime: TimeSpan = .seconds(10),
            maxReportsPerReporter: Int = 64,
            maxUnknownTargets: Int = 64,
            minAgreeingPaths: Int = 2,
            boundSigmas: Double = 4.5
        ) {
            precondition(minAgreeingPaths >= 1)
            precondition(boundSigmas > 0)
            self.boundSigmas = boundSigmas
            self.reportLifetime = reportLifetime
            self.maxReportsPerReporter = maxReportsPerReporter
            self.maxUnknownTargets = maxUnknownTargets
            self.minAgreeingPaths = minAgreeingPaths
        }
    }

    /// Where a resolved offset comes from.
    public enum Source: Sendable, Hashable {
        /// The local agent's own measurement.
        case direct
        /// The two-hop path through this peer.
        case via(PeerID)
    }

    /// The offset to use for a peer, and how well the mesh agrees with it.
    public struct ResolvedOffset: Sendable, Equatable {
        /// The estimate to use, on the local clock, referenced at the time asked for.
        public var estimate: ClockEstimate
        public var source: Source
        /// Two-hop paths compared with the direct estimate.
        public var pathCount: Int
        /// Paths that did not close within their tolerance.
        public var disagreeingPaths: Int
        /// Median |direct − path| over the paths, in ns (nil without a direct estimate or paths).
        public var closureErrorNs: Double?
        /// Largest |direct − path|, in ns.
        public var worstClosureErrorNs: Double?
        /// The tolerance of the path with the largest closure error, in ns.
        public var worstClosureToleranceNs: Double?
        /// False when the mesh contradicts the estimate used and cannot say which link is wrong.
        public var trusted: Bool
        /// How many two-hop paths the estimate averages (0: the direct one, 1: one path).
        public var combinedPaths = 0
        /// How much the bound was widened for asymmetry the exchanges cannot see, in ns.
        public var asymmetryNs = 0.0
        /// How many times the asymmetry scale widens the bound (see the type's documentation): 1
        /// for a direct estimate, √2 for one two-hop path, less for paths averaged.
        public var asymmetryFactor = 1.0
    }

    /// A two-hop path to a peer, brought onto the local clock.
    public struct Path: Sendable, Equatable {
        public var via: PeerID
        public var estimate: ClockEstimate
        /// The reporter's address: paths through one address are one vote.
        public var host: String
    }

    /// What the local agent knows of a reporter, from discovery.
    public struct Reporter: Sendable, Equatable {
        /// Discovery vouches for it: DNS-SD showed it, or it was configured.
        public var vetted: Bool
        /// The address it speaks from (without the port).
        public var host: String

        public init(vetted: Bool, host: String) {
            self.vetted = vetted
            self.host = host
        }
    }

    /// What happened to a report.
    public enum ReportVerdict: Sendable, Equatable {
        case stored
        /// About ourselves, or from a peer about itself.
        case ignoredSelf
        /// From a peer we have no direct estimate of: its clock cannot be converted.
        case ignoredUnknownReporter
        /// From a peer discovery does not vouch for (heard from only): it could be anyone's alias.
        case ignoredUnvetted
        /// Over a cap (targets per reporter, or peers we do not measure).
        case ignoredOverCapacity
    }

    struct Report: Sendable {
        var estimate: ReportedEstimate
        var receivedAt: LocalTime
        var host: String
    }

    public let localID: PeerID
    public let configuration: Configuration
    private var local: [PeerID: ClockEstimate] = [:] { didSet { scaleMemo = ScaleMemo() } }
    private var reports: [PeerID: [PeerID: Report]] = [:] { didSet { scaleMemo = ScaleMemo() } }
    /// The asymmetry scale last computed, and for which instant. It reads every closure in the
    /// mesh, and one event resolves every peer at one instant (the group clock's feed, a state
    /// view, a command's lead): computed once, not once per peer, which at 64 peers was most of
    /// a command's cost. A fresh box at every change of the estimates or reports, so copies of
    /// this mesh never read one another's.
    private var scaleMemo = ScaleMemo()

    public init(localID: PeerID, configuration: Configuration = .init()) {
        self.localID = localID
        self.configuration = configuration
    }

    /// The direct estimates, for gossip.
    public var directEstimates: [PeerID: ClockEstimate] { local }

    // MARK: - Input

    /// The local agent's direct estimate of `peer` changed.
    public mutating func updateLocal(peer: PeerID, estimate: ClockEstimate) {
        guard peer != localID else { return }
        local[peer] = estimate
    }

    /// `reporter` says this about `target`, on `reporter`'s clock.
    @discardableResult
    public mutating func updateReport(
        from reporter: PeerID, _ info: Reporter, target: PeerID, estimate: ReportedEstimate, receivedAt now: LocalTime
    ) -> ReportVerdict {
        guard reporter != localID, target != localID, target != reporter else { return .ignoredSelf }
        guard local[reporter] != nil else { return .ignoredUnknownReporter }
        guard info.vetted else { return .ignoredUnvetted }
        var byTarget = reports[reporter] ?? [:]
        byTarget = byTarget.filter { now - $0.value.receivedAt < configuration.reportLifetime }
        if byTarget[target] == nil {
            if byTarget.count >= configuration.maxReportsPerReporter { return .ignoredOverCapacity }
            if local[target] == nil, !unknownTargets.contains(target),
                unknownTargets.count >= configuration.maxUnknownTargets
            {
                return .ignoredOverCapacity
            }
        }
        byTarget[target] = Report(estimate: estimate, receivedAt: now, host: info.host)
        reports[reporter] = byTarget
        return .stored
    }

    /// This node no longer measures `peer` (``ClockNeighbours``): its direct estimate goes, and
    /// with it its reports (they cannot be converted); reports about it stay, its paths.
    public mutating func removeDirect(_ peer: PeerID) {
        local[peer] = nil
        reports[peer] = nil
    }

    /// Forgets a peer: its direct estimate, its reports and the reports about it.
    public mutating func removePeer(_ peer: PeerID) {
        local[peer] = nil
        reports[peer] = nil
        for reporter in Array(reports.keys) {
            reports[reporter]?[peer] = nil
        }
    }

    /// Drops reports older than the lifetime.
    public mutating func expire(at now: LocalTime) {
        for (reporter, byTarget) in reports {
            let kept = byTarget.filter { now - $0.value.receivedAt < configuration.reportLifetime }
            reports[reporter] = kept.isEmpty ? nil : kept
        }
    }

    /// Peers that reports are kept about but that are not measured directly.
    private var unknownTargets: Set<PeerID> {
        var set = Set<PeerID>()
        for byTarget in reports.values {
            for target in byTarget.keys where local[target] == nil { set.insert(target) }
        }
        return set
    }

    // MARK: - Output

    /// Every two-hop path to `peer` at local time `now`: the reporter and the composed estimate.
    public func paths(to peer: PeerID, at now: LocalTime) -> [Path] {
        var out: [Path] = []
        for (reporter, byTarget) in reports where reporter != peer {
            guard let report = byTarget[peer], now - report.receivedAt < configuration.reportLifetime,
                let first = local[reporter]
            else { continue }
            out.append(Path(via: reporter, estimate: first.composed(with: report.estimate, at: now), host: report.host))
        }
        return out.sorted { $0.via < $1.via }
    }

    /// How many votes some paths make: one per reporter address.
    static func votes(_ paths: [Path]) -> Int {
        Set(paths.map(\.host)).count
    }

    /// The asymmetry scale at `now`, in ns; nil without any closure (a direct estimate and one of
    /// its two-hop paths). A closure c = direct − path is the three links' biases plus their noise,
    /// whose variance σ² is the two estimates' statistical bounds squared, over
    /// ``Configuration/boundSigmas`` squared. The scale is √(median of c² − σ²), 0 if that median
    /// is negative: what the closures hold beyond their own noise, as E[c²] = bias² + σ². Links
    /// that are symmetric (noise alone: c² exceeds σ² in under a third of closures) give 0, so their
    /// bounds are not widened for their noise twice; biased ones give their biases' typical size.
    /// A closure whose estimates carry a delay-step alarm counts whole (its bound holds a bias,
    /// not noise). (See the type's documentation.)
    public func asymmetryScaleNs(at now: LocalTime) -> Double? {
        scaleMemo.value(at: now) { computeAsymmetryScaleNs(at: now) }
    }

    private func computeAsymmetryScaleNs(at now: LocalTime) -> Double? {
        var excess: [Double] = []
        for (peer, estimate) in local {
            let direct = estimate.rebased(to: now)
            for path in paths(to: peer, at: now) {
                let closure = direct.offsetNs - path.estimate.offsetNs
                excess.append(closure * closure - noiseVariance(direct, path.estimate))
            }
        }
        guard !excess.isEmpty else { return nil }
        excess.sort()
        let mid = excess.count / 2
        let median = excess.count % 2 == 1 ? excess[mid] : (excess[mid - 1] + excess[mid]) / 2
        return max(0, median).squareRoot()
    }

    /// The variance of the noise in the closure of `direct` and `path`, ns²: their statistical
    /// bounds' squares over ``Configuration/boundSigmas`` squared; 0 if either carries a delay step.
    private func noiseVariance(_ direct: ClockEstimate, _ path: ClockEstimate) -> Double {
        guard direct.delayStep == .zero, path.delayStep == .zero else { return 0 }
        let z = configuration.boundSigmas
        return (direct.errorBoundNs * direct.errorBoundNs + path.errorBoundNs * path.errorBoundNs) / (z * z)
    }

    /// The offset to use for `peer` at local time `now`, checked against the mesh, its bound
    /// widened by the asymmetry scale ``ResolvedOffset/asymmetryFactor`` times (see the type's
    /// documentation).
    public func resolved(peer: PeerID, at now: LocalTime) -> ResolvedOffset? {
        guard var resolved = checked(peer: peer, at: now) else { return nil }
        if let scale = asymmetryScaleNs(at: now) {
            let widening = resolved.asymmetryFactor
            var e = resolved.estimate
            e.errorBoundNs = min(e.errorBoundNs + widening * scale, max(e.hardBoundNs, e.errorBoundNs))
            resolved.estimate = e
            resolved.asymmetryNs = widening * scale
        }
        return resolved
    }

    /// ``resolved(peer:at:)`` before the asymmetry: the direct estimate checked against its paths.
    /// Its offset and rate are the resolved ones; only its bound is not yet widened, so it
    /// converts instants exactly as ``resolved(peer:at:)`` does, without reading every closure of
    /// the mesh for the asymmetry scale.
    public func checked(peer: PeerID, at now: LocalTime) -> ResolvedOffset? {
        let paths = paths(to: peer, at: now)
        guard let direct = local[peer]?.rebased(to: now) else {
            // Only two-hop paths (a peer this node does not measure): those that agree with the
            // best one, combined; trusted if none contradicts it.
            guard let best = paths.min(by: { $0.estimate.errorBoundNs < $1.estimate.errorBoundNs }) else { return nil }
            let agreeing = paths.filter { Self.agree(best.estimate, $0.estimate) }
            let (estimate, factor) = Self.combined(agreeing, best: best)
            var resolved = ResolvedOffset(
                estimate: estimate, source: .via(best.via), pathCount: paths.count,
                disagreeingPaths: 0, closureErrorNs: nil, worstClosureErrorNs: nil, worstClosureToleranceNs: nil,
                trusted: agreeing.count == paths.count
            )
            resolved.combinedPaths = agreeing.count
            resolved.asymmetryFactor = factor
            return resolved
        }
        var resolved = ResolvedOffset(
            estimate: direct, source: .direct, pathCount: paths.count, disagreeingPaths: 0,
            closureErrorNs: nil, worstClosureErrorNs: nil, worstClosureToleranceNs: nil, trusted: true
        )
        guard !paths.isEmpty else { return resolved }

        var errors: [Double] = []
        var dissenters: [Path] = []
        var worst = -1.0
        for path in paths {
            let error = (direct.offsetNs - path.estimate.offsetNs).magnitude
            errors.append(error)
            if error > worst {
                worst = error
                resolved.worstClosureToleranceNs = direct.errorBoundNs + path.estimate.errorBoundNs
            }
            if !Self.agree(direct, path.estimate) { dissenters.append(path) }
        }
        errors.sort()
        let mid = errors.count / 2
        resolved.closureErrorNs = errors.count % 2 == 1 ? errors[mid] : (errors[mid - 1] + errors[mid]) / 2
        resolved.worstClosureErrorNs = worst
        resolved.disagreeingPaths = dissenters.count
        let supporters = Self.votes(paths.filter { path in !dissenters.contains { $0.via == path.via } })
        guard !dissenters.isEmpty else { return resolved }

        // The largest group (in votes) of dissenting paths that agree with each other.
        var consensus: [Path] = []
        for candidate in dissenters {
            let group = dissenters.filter { Self.agree(candidate.estimate, $0.estimate) }
            if Self.votes(group) > Self.votes(consensus) { consensus = group }
        }
        let votes = Self.votes(consensus)
        if votes >= configuration.minAgreeingPaths, votes > supporters,
            let best = consensus.min(by: { $0.estimate.errorBoundNs < $1.estimate.errorBoundNs })
        {
            resolved.estimate = best.estimate
            resolved.source = .via(best.via)
            resolved.asymmetryFactor = Self.onePathAsymmetryFactor
            resolved.trusted = true
        } else {
            resolved.trusted = supporters >= Self.votes(dissenters)
        }
        return resolved
    }

    /// One two-hop path's asymmetry widening: its two links' biases, independent.
    static let onePathAsymmetryFactor = 2.0.squareRoot()

    /// Two-hop paths to one peer, all referenced at the same time, averaged with weights
    /// 1/bound² (the offset, the skew, the hard bound and the growth rates), and the factor by
    /// which the asymmetry scale widens the average. The hard bound stays honest for any errors:
    /// if every path is within its bound bᵢ of the truth, their average with weights wᵢ (summing
    /// to 1) is within Σ wᵢ bᵢ, at any time (each is a line). The statistical bound is that of an
    /// average of independent errors, √(Σₐ (Σᵢ∈ₐ wᵢ bᵢ)²): paths through different addresses share
    /// no link (in simulated groups of 16 and 32, two paths' errors to one peer correlated by under
    /// 0.06: docs/scale.md), while paths through one address may be one error (several ids on one
    /// machine), so theirs add. With a delay step alarm on any path it is Σ wᵢ bᵢ. The asymmetry
    /// factor is √(2 Σₐ Wₐ²), Wₐ the weight of address a: √2 for one path, 1 for two of equal
    /// weight. What paths between the same two ends do share, a bias of either end's own, no
    /// closure shows, so the scale does not stand for it (see the type's documentation). The rest
    /// is `best`'s.
    static func combined(_ paths: [Path], best: Path) -> (estimate: ClockEstimate, asymmetryFactor: Double) {
        guard paths.count > 1 else { return (best.estimate, onePathAsymmetryFactor) }
        let raw = paths.map { 1 / max($0.estimate.errorBoundNs * $0.estimate.errorBoundNs, 1) }
        let total = raw.reduce(0, +)
        func mean(_ value: (ClockEstimate) -> Double) -> Double {
            zip(paths, raw).reduce(0) { $0 + value($1.0.estimate) * $1.1 / total }
        }
        var weights: [String: Double] = [:], weightedBounds: [String: Double] = [:]
        for (path, w) in zip(paths, raw) {
            weights[path.host, default: 0] += w / total
            weightedBounds[path.host, default: 0] += path.estimate.errorBoundNs * w / total
        }
        var out = best.estimate
        out.offsetNs = mean(\.offsetNs)
        out.skewPPM = mean(\.skewPPM)
        if paths.allSatisfy({ $0.estimate.delayStep == .zero }) {
            out.errorBoundNs = weightedBounds.values.rootSumSquare
        } else {
            out.errorBoundNs = mean(\.errorBoundNs)
        }
        out.errorGrowthPPM = mean(\.errorGrowthPPM)
        out.hardBoundNs = mean(\.hardBoundNs)
        out.hardGrowthPPM = mean(\.hardGrowthPPM)
        return (out, onePathAsymmetryFactor * weights.values.rootSumSquare)
    }

    /// Two estimates of the same offset at the same reference time agree within their bounds.
    static func agree(_ a: ClockEstimate, _ b: ClockEstimate) -> Bool {
        (a.offsetNs - b.offsetNs).magnitude <= a.errorBoundNs + b.errorBoundNs
    }
}
