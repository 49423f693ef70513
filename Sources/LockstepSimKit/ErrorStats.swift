/// Error statistics over a run: errors against the truth, and how often the bounds covered them.
public struct ErrorStats: Sendable, CustomStringConvertible {
    public var errors: [Double] = []
    public var bounds: [Double] = []
    public var covered = 0
    public var hardCovered = 0
    public var count: Int { errors.count }

    public init() {}

    public mutating func add(error: Double, bound: Double, hardBound: Double) {
        errors.append(error.magnitude)
        bounds.append(bound)
        if error.magnitude <= bound { covered += 1 }
        if error.magnitude <= hardBound { hardCovered += 1 }
    }

    /// Pools another run's figures into these.
    public mutating func merge(_ other: ErrorStats) {
        errors += other.errors
        bounds += other.bounds
        covered += other.covered
        hardCovered += other.hardCovered
    }

    public func percentile(_ values: [Double], _ p: Double) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        let i = min(sorted.count - 1, Int((p * Double(sorted.count - 1)).rounded()))
        return sorted[i]
    }

    public var median: Double { percentile(errors, 0.5) }
    public var p99: Double { percentile(errors, 0.99) }
    public var max: Double { errors.max() ?? .nan }
    public var coverage: Double { Double(covered) / Double(Swift.max(1, count)) }
    public var hardCoverage: Double { Double(hardCovered) / Double(Swift.max(1, count)) }
    public var medianBound: Double { percentile(bounds, 0.5) }
    /// Typical bound over the p99 error: the tightness figure (≤ 3 wanted).
    public var tightness: Double { medianBound / p99 }

    /// Tightness judged against at least `floorNs` of error: on the simulated veth the errors are
    /// a few hundred ns, below what any real measurement resolves, and there a bound of
    /// 0.5 µs is not "loose" in any sense that matters.
    public func tightness(floorNs: Double) -> Double { medianBound / Swift.max(p99, floorNs) }

    public var description: String {
        func us(_ v: Double) -> String { Self.format(v / 1000) + " µs" }
        return "n=\(count) median=\(us(median)) p99=\(us(p99)) max=\(us(max)) "
            + "coverage=\(Self.format(coverage * 100))% bound(median)=\(us(medianBound)) bound/p99=\(Self.format(tightness)) "
            + "hardCoverage=\(Self.format(hardCoverage * 100))%"
    }

    /// A figure rounded to two decimals.
    public static func format(_ v: Double) -> String {
        guard v.isFinite else { return "\(v)" }
        let r = (v * 100).rounded() / 100
        return "\(r)"
    }
}
