/// A length of time, or the signed difference between two instants on one clock, in nanoseconds.
///
/// Arithmetic saturates at the ends of `Int64` instead of trapping: every value that reaches the
/// core has been range-checked where it entered (`Limits`), and saturation makes the rest of the
/// core unable to trap whatever a decoder let through. Durations in configurations, latencies,
/// error bounds, round trips and timeouts are all `TimeSpan`s; instants are ``LocalTime`` or
/// ``PeerTime``, media positions ``MediaPosition``.
public struct TimeSpan: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// Nanoseconds.
    public var ns: Int64

    @inline(__always)
    public init(ns: Int64) {
        self.ns = ns
    }

    public static let zero = TimeSpan(ns: 0)
    /// The longest span (about 292 years): "never" for deadlines.
    public static let max = TimeSpan(ns: .max)

    @inline(__always) public static func nanoseconds(_ n: Int64) -> TimeSpan { TimeSpan(ns: n) }
    @inline(__always) public static func microseconds(_ n: Int64) -> TimeSpan { TimeSpan(ns: n.multipliedSaturating(by: 1_000)) }
    @inline(__always) public static func milliseconds(_ n: Int64) -> TimeSpan { TimeSpan(ns: n.multipliedSaturating(by: 1_000_000)) }
    @inline(__always) public static func seconds(_ n: Int64) -> TimeSpan { TimeSpan(ns: n.multipliedSaturating(by: 1_000_000_000)) }
    /// From seconds, rounded to the nearest nanosecond (saturating; NaN is zero).
    public init(seconds s: Double) { self.init(ns: Int64(saturating: (s * 1e9).rounded())) }
    /// From nanoseconds as a `Double`, rounded (saturating; NaN is zero).
    public init(nanoseconds n: Double) { self.init(ns: Int64(saturating: n.rounded())) }

    /// In seconds.
    public var seconds: Double { Double(ns) / 1e9 }
    /// In milliseconds.
    public var milliseconds: Double { Double(ns) / 1e6 }
    /// The absolute value (saturating: the magnitude of `Int64.min` is `Int64.max`).
    public var magnitude: TimeSpan { TimeSpan(ns: ns == .min ? .max : Swift.abs(ns)) }

    public static func < (a: TimeSpan, b: TimeSpan) -> Bool { a.ns < b.ns }

    @inline(__always) public static func + (a: TimeSpan, b: TimeSpan) -> TimeSpan { TimeSpan(ns: a.ns.addingSaturating(b.ns)) }
    @inline(__always) public static func - (a: TimeSpan, b: TimeSpan) -> TimeSpan { TimeSpan(ns: a.ns.subtractingSaturating(b.ns)) }
    @inline(__always) public static prefix func - (a: TimeSpan) -> TimeSpan { TimeSpan(ns: Int64(0).subtractingSaturating(a.ns)) }
    @inline(__always) public static func += (a: inout TimeSpan, b: TimeSpan) { a = a + b }
    @inline(__always) public static func -= (a: inout TimeSpan, b: TimeSpan) { a = a - b }
    @inline(__always) public static func * (a: TimeSpan, k: Int64) -> TimeSpan { TimeSpan(ns: a.ns.multipliedSaturating(by: k)) }
    @inline(__always) public static func * (k: Int64, a: TimeSpan) -> TimeSpan { a * k }
    /// Scaled by a factor, rounded (saturating; NaN is zero).
    @inline(__always) public static func * (a: TimeSpan, k: Double) -> TimeSpan { TimeSpan(nanoseconds: Double(a.ns) * k) }
    /// Divided by a positive integer (a non-positive divisor gives zero rather than a trap).
    @inline(__always) public static func / (a: TimeSpan, k: Int64) -> TimeSpan { k > 0 ? TimeSpan(ns: a.ns / k) : .zero }
    /// The ratio of two spans (NaN-free: a zero divisor gives zero).
    @inline(__always) public static func / (a: TimeSpan, b: TimeSpan) -> Double { b.ns == 0 ? 0 : Double(a.ns) / Double(b.ns) }
    /// Shifted left (doubled `n` times), saturating.
    public func doubled(_ n: Int) -> TimeSpan {
        var out = self
        for _ in 0..<Swift.max(0, Swift.min(n, 63)) { out = out + out }
        return out
    }

    public init(from decoder: any Decoder) throws {
        ns = try decoder.singleValueContainer().decode(Int64.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(ns)
    }

    /// `1.234ms`, `56µs`, `2.5s`.
    public var description: String {
        let m = ns == .min ? UInt64(Int64.max) + 1 : UInt64(Swift.abs(ns))
        let sign = ns < 0 ? "-" : ""
        if m >= 1_000_000_000 { return sign + Self.format(Double(m) / 1e9) + "s" }
        if m >= 1_000_000 { return sign + Self.format(Double(m) / 1e6) + "ms" }
        if m >= 1_000 { return sign + Self.format(Double(m) / 1e3) + "µs" }
        return "\(ns)ns"
    }

    private static func format(_ v: Double) -> String {
        let hundredths = (v * 100).rounded()
        let whole = Int64(saturating: hundredths / 100)
        let frac = Int64(saturating: hundredths) - whole * 100
        if frac == 0 { return "\(whole)" }
        return frac % 10 == 0 ? "\(whole).\(frac / 10)" : "\(whole).\(frac < 10 ? "0" : "")\(frac)"
    }
}

extension TimeSpan {
    /// The span moved into `range` (nanoseconds).
    public func clamped(to range: ClosedRange<Int64>) -> TimeSpan {
        TimeSpan(ns: Swift.min(Swift.max(ns, range.lowerBound), range.upperBound))
    }
}
