/// An instant on one clock, in nanoseconds on that clock's scale. ``LocalTime`` and ``PeerTime``
/// are the two kinds the core uses; they cannot be mixed by accident, and move from one clock to
/// the other only through a ``ClockEstimate`` (with its error bound).
///
/// Arithmetic with ``TimeSpan`` saturates instead of trapping (see ``TimeSpan``).
public protocol ClockInstant: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// Nanoseconds on the clock's scale.
    var ns: Int64 { get }
    init(ns: Int64)
}

extension ClockInstant {
    public static func < (a: Self, b: Self) -> Bool { a.ns < b.ns }

    /// The instant `d` later (saturating).
    @inline(__always) public static func + (t: Self, d: TimeSpan) -> Self { Self(ns: t.ns.addingSaturating(d.ns)) }
    /// The instant `d` earlier (saturating).
    @inline(__always) public static func - (t: Self, d: TimeSpan) -> Self { Self(ns: t.ns.subtractingSaturating(d.ns)) }
    /// How long from `b` to `a` (saturating).
    @inline(__always) public static func - (a: Self, b: Self) -> TimeSpan { TimeSpan(ns: a.ns.subtractingSaturating(b.ns)) }
    @inline(__always) public static func += (t: inout Self, d: TimeSpan) { t = t + d }

    /// The earliest and latest instants: "never" for deadlines.
    public static var distantPast: Self { Self(ns: .min) }
    public static var distantFuture: Self { Self(ns: .max) }

    public init(from decoder: any Decoder) throws {
        self.init(ns: try decoder.singleValueContainer().decode(Int64.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(ns)
    }

    public var description: String { "\(ns)" }
}
