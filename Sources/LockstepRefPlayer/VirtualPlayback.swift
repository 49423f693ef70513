import LockstepCore

/// The truth of a reference player's playback: a piecewise-linear media position over host time.
///
/// A segment says "from host time `from`, the media is at `position` and advances at `rate`
/// (media ns per host ns, the media clock's drift included)". Every change (start, pause, seek,
/// rate correction) adds a segment, so the true position at any host time is known exactly —
/// which is what the benchmark compares across hosts.
public struct VirtualPlayback: Sendable, Equatable {
    public struct Segment: Sendable, Equatable, Codable {
        public var from: Int64
        public var position: Int64
        /// Media ns per host ns (0 while paused).
        public var rate: Double

        public func position(at t: Int64) -> Int64 {
            position.addingSaturating(Int64(saturating: (Double(t.subtractingSaturating(from)) * rate).rounded()))
        }

        enum CodingKeys: String, CodingKey {
            case from = "from_host_ns"
            case position = "position_ns"
            case rate
        }
    }

    /// The player's media clock runs this much fast relative to the host clock (ppm).
    public let driftPPM: Double
    public private(set) var segments: [Segment]

    public init(driftPPM: Double = 0, at start: Int64 = 0) {
        self.driftPPM = driftPPM
        self.segments = [Segment(from: start, position: 0, rate: 0)]
    }

    /// The segment in force at host time `t`.
    public func segment(at t: Int64) -> Segment {
        segments.last { $0.from <= t } ?? segments[0]
    }

    public func position(at t: Int64) -> Int64 { segment(at: t).position(at: t) }

    /// The nominal rate (without drift) in force at `t`: 0 when paused.
    public func nominalRate(at t: Int64) -> Double { segment(at: t).rate / (1 + driftPPM * 1e-6) }

    /// From `t` on: at `position` (or where it is, if nil), at nominal `rate` (0 = paused).
    /// Later segments (scheduled changes that have not happened yet) are dropped.
    @discardableResult
    public mutating func change(at t: Int64, position: Int64? = nil, rate: Double) -> Segment {
        let p = position ?? self.position(at: t)
        segments.removeAll { $0.from >= t }
        let s = Segment(from: t, position: max(0, p), rate: rate * (1 + driftPPM * 1e-6))
        segments.append(s)
        // Keep memory bounded in long runs: the past beyond a few hundred segments is not needed.
        if segments.count > 512 { segments.removeFirst(segments.count - 512) }
        return s
    }
}
