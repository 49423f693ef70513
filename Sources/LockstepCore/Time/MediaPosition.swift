/// A position in the media, in nanoseconds from its start: never negative, at most ``max``.
///
/// Positions come from players and peers (checked at the edge against ``max``); arithmetic on
/// them clamps to `0...max`, so no position can overflow whatever a rate or a span does to it.
public struct MediaPosition: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// The longest media the group plays: one year (a live stream that has run that long restarts).
    public static let max = MediaPosition(clamping: 365 * 24 * 3600 * 1_000_000_000)
    public static let zero = MediaPosition(clamping: 0)

    /// Nanoseconds from the start.
    public let ns: Int64

    /// `ns` clamped to `0...max`.
    @inline(__always)
    public init(clamping ns: Int64) {
        self.ns = Swift.min(Swift.max(ns, 0), 365 * 24 * 3600 * 1_000_000_000)
    }

    /// `ns` if it is a position (`0...max`), else nil: for values checked at the edge.
    public init?(exactly ns: Int64) {
        guard ns >= 0, ns <= MediaPosition.max.ns else { return nil }
        self.ns = ns
    }

    public static func < (a: MediaPosition, b: MediaPosition) -> Bool { a.ns < b.ns }

    /// Where playback at `rate` is after `elapsed` (negative spans go back), clamped.
    @inline(__always)
    public func advanced(by elapsed: TimeSpan, rate: Double) -> MediaPosition {
        MediaPosition(clamping: ns.addingSaturating(Int64(saturating: (Double(elapsed.ns) * rate).rounded())))
    }

    /// `span` later in the media, clamped.
    @inline(__always)
    public static func + (p: MediaPosition, span: TimeSpan) -> MediaPosition { MediaPosition(clamping: p.ns.addingSaturating(span.ns)) }

    /// How far `a` is ahead of `b` in the media (negative: behind).
    @inline(__always)
    public static func - (a: MediaPosition, b: MediaPosition) -> TimeSpan { TimeSpan(ns: a.ns - b.ns) }

    /// In seconds.
    public var seconds: Double { Double(ns) / 1e9 }

    public init(from decoder: any Decoder) throws {
        let ns = try decoder.singleValueContainer().decode(Int64.self)
        guard let p = MediaPosition(exactly: ns) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "a media position is 0...\(MediaPosition.max.ns) ns"))
        }
        self = p
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(ns)
    }

    public var description: String { TimeSpan(ns: ns).description }
}
