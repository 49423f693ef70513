import LockstepCore
import LockstepMPV

/// One reading of a player's media position: mpv evaluated it somewhere between `sentAt` and
/// `receivedAt` (host time, ns), so it is placed at the middle of that round trip.
public struct PositionSample: Sendable, Equatable {
    public var sentAt: Int64
    public var receivedAt: Int64
    /// Seconds of media; nil when mpv had none (no file, seeking, no audio track…).
    public var position: Double?

    public init(sentAt: Int64, receivedAt: Int64, position: Double?) {
        self.sentAt = sentAt
        self.receivedAt = receivedAt
        self.position = position
    }

    public init(_ reply: MPVReply) {
        self.init(sentAt: reply.sentAt, receivedAt: reply.receivedAt, position: reply.succeeded ? reply.data.double : nil)
    }

    /// The host time the reading is attributed to: the middle of its round trip.
    public var time: Int64 { sentAt + (receivedAt - sentAt) / 2 }
    public var roundTrip: Int64 { receivedAt - sentAt }
}

/// The readings of one player's position, and what they say about it: its position at any
/// host instant, and when it started, stopped or jumped. A value: no I/O, no clock.
///
/// **Continuous sources** (`audio-pts`, which mpv computes at each request from the audio
/// output's delay, so it moves between any two readings): each reading is a point
/// (round-trip midpoint, position). The position at host time `t` is the intercept at `t` of
/// a least-squares line through the readings within ``window`` of `t`; if any of them is more
/// than ``tolerance`` off that line (a pause, a seek, a speed change in the window), the window
/// is halved until they fit, down to interpolating the two readings around `t` (none if the
/// player jumped between them: a seek leaves no position between its two sides).
///
/// **Stepping sources** (`time-pos`, `playback-time`: they hold a value until the next block of
/// audio or the next video frame, 10–100 ms later): each change of value is an edge, placed
/// midway between the last reading of the old value and the first of the new one, at which
/// the new value is the true position. Lines are fitted through the edges, not the readings,
/// so many edges resolve far below the step size (sampling faster narrows each edge). Meant
/// for steady playback; with a stepping source a pause is not distinguished from a long step.
///
/// Readings whose round trip exceeds ``maxRoundTrip`` are ignored: when they were evaluated
/// is too uncertain (a busy mpv, a stalled one).
public struct PositionTrack: Sendable {
    public enum Kind: Sendable, Equatable {
        case continuous
        case steps

        /// How mpv's property behaves: `audio-pts` is continuous, the others step.
        public static func of(property: String) -> Kind {
            property == "audio-pts" ? .continuous : .steps
        }
    }

    /// A point the estimates are made from: a reading (continuous) or an edge (steps).
    public struct Point: Sendable, Equatable {
        public var time: Int64
        /// nil: the player had no position then (breaks every fit).
        public var position: Double?
    }

    /// An estimate of the position at one instant.
    public struct Estimate: Sendable, Equatable {
        public var position: Double
        /// Media seconds per host second in the fitted window (0 when paused).
        public var rate: Double
        /// Points the estimate rests on (2: interpolated between the two around the instant).
        public var points: Int
        /// The largest distance of a point from the fitted line, in seconds.
        public var residual: Double
    }

    public let kind: Kind
    public private(set) var samples: [PositionSample] = []
    public private(set) var points: [Point] = []
    /// Readings with a longer round trip are ignored.
    public var maxRoundTrip: Int64 = 2 * Nanos.millisecond
    /// Half-width of the fitting window.
    public var window: Int64
    /// Largest distance between the two points around an instant for an estimate there.
    public var maxGap: Int64
    /// Largest residual (seconds) a fit may leave before the window is narrowed.
    public var tolerance: Double

    /// The last reading used, for edge detection.
    private var lastUsable: PositionSample?
    /// Moving average of the spacing of readings (ns), which bounds an edge's timing error.
    private var spacing: Double = 0

    public init(kind: Kind = .continuous, samples: [PositionSample] = []) {
        self.kind = kind
        switch kind {
        case .continuous:
            window = 100 * Nanos.millisecond
            maxGap = 150 * Nanos.millisecond
            tolerance = 0.001
        case .steps:
            window = 1 * Nanos.second
            maxGap = 400 * Nanos.millisecond
            tolerance = 0.002
        }
        for s in samples { append(s) }
    }

    public mutating func append(_ sample: PositionSample) {
        samples.append(sample)
        guard sample.roundTrip <= maxRoundTrip else { return }
        if let last = lastUsable {
            let d = Double(sample.time - last.time)
            spacing = spacing == 0 ? d : spacing * 0.95 + d * 0.05
        }
        defer { lastUsable = sample }
        switch kind {
        case .continuous:
            points.append(Point(time: sample.time, position: sample.position))
        case .steps:
            guard let value = sample.position else {
                points.append(Point(time: sample.time, position: nil))
                return
            }
            guard let last = lastUsable, let old = last.position else { return }
            if value != old {
                points.append(Point(time: last.time + (sample.time - last.time) / 2, position: value))
            }
        }
    }

    public var isEmpty: Bool { points.isEmpty }

    /// The player's position at host time `t`, or nil if the readings do not bracket `t`
    /// closely enough (or the player had no position then).
    public func position(at t: Int64) -> Double? {
        estimate(at: t)?.position
    }

    public func estimate(at t: Int64) -> Estimate? {
        let i = firstIndex(atOrAfter: t)
        let lo: Int, hi: Int
        if i < points.count, points[i].time == t {
            (lo, hi) = (i, i)
        } else {
            guard i > 0, i < points.count else { return nil }
            (lo, hi) = (i - 1, i)
        }
        guard let vLo = points[lo].position, let vHi = points[hi].position, points[hi].time - points[lo].time <= maxGap
        else { return nil }
        let tol = kind == .steps ? max(tolerance, spacing / 1e9 + 0.001) : tolerance
        var w = window
        while true {
            var first = lo, last = hi
            while first > 0, points[first - 1].position != nil, points[first - 1].time >= t - w { first -= 1 }
            while last + 1 < points.count, points[last + 1].position != nil, points[last + 1].time <= t + w { last += 1 }
            if last - first + 1 >= 3, let fit = Self.fit(points[first...last], at: t), fit.residual <= tol {
                return fit
            }
            if last - first + 1 <= 2 || w < Nanos.millisecond {
                guard lo != hi else { return Estimate(position: vLo, rate: 0, points: 1, residual: 0) }
                let span = Double(points[hi].time - points[lo].time)
                let rate = (vHi - vLo) / (span / 1e9)
                // A jump between the two readings: the position in between is unknown.
                guard rate > -0.05, rate < 4 else { return nil }
                return Estimate(position: vLo + rate * Double(t - points[lo].time) / 1e9, rate: rate, points: 2, residual: 0)
            }
            w /= 2
        }
    }

    /// When the player started moving after host time `after` (and before `before`): the
    /// instant at which a line fitted to its first 300 ms of movement leaves the position it
    /// was paused at.
    public func startedMoving(after: Int64, before: Int64 = .max) -> Int64? {
        var k = max(firstIndex(atOrAfter: after), 1)
        while k < points.count, points[k].time < before {
            if let v = points[k].position, let p = points[k - 1].position, v - p > 0.0005 {
                let moving = run(from: k, through: points[k].time + 300 * Nanos.millisecond)
                guard moving.count >= 3, let line = Self.fit(moving, at: points[k].time), line.rate > 0.1 else {
                    return points[k - 1].time + (points[k].time - points[k - 1].time) / 2
                }
                let t = points[k].time - Int64((line.position - p) / line.rate * 1e9)
                return min(max(t, points[k - 1].time), points[k].time)
            }
            k += 1
        }
        return nil
    }

    /// When the player stopped moving after `after` (and before `before`): the instant at which
    /// a line fitted to its last 300 ms of movement reaches the position it stayed at.
    public func stoppedMoving(after: Int64, before: Int64 = .max) -> Int64? {
        var k = max(firstIndex(atOrAfter: after), 1)
        while k + 2 < points.count, points[k].time < before {
            if let a = points[k - 1].position, let v = points[k].position, v != a,
               points[k + 1].position == v, points[k + 2].position == v {
                // k is the first reading of the frozen value.
                let moving = runBackwards(from: k - 1, through: points[k - 1].time - 300 * Nanos.millisecond)
                guard moving.count >= 3, let line = Self.fit(moving, at: points[k - 1].time), line.rate > 0.1 else {
                    return points[k - 1].time + (points[k].time - points[k - 1].time) / 2
                }
                let t = points[k - 1].time + Int64((v - line.position) / line.rate * 1e9)
                return min(max(t, points[k - 1].time), points[k].time)
            }
            k += 1
        }
        return nil
    }

    /// When the player left its course by more than `minimum` seconds after `after` (a seek, a
    /// rewind; also losing its position, as while seeking): midway between the last point on
    /// the old course and the next one.
    public func jumped(after: Int64, before: Int64 = .max, minimum: Double = 0.5) -> Int64? {
        var k = max(firstIndex(atOrAfter: after), 1)
        while k < points.count, points[k].time < before {
            let a = points[k - 1], b = points[k]
            if let p = a.position {
                let elapsed = Double(b.time - a.time) / 1e9
                if b.position.map({ abs($0 - p) > minimum && abs($0 - p - elapsed) > minimum }) ?? true {
                    return a.time + (b.time - a.time) / 2
                }
            }
            k += 1
        }
        return nil
    }

    /// The first point at or after `t` (binary search).
    public func firstIndex(atOrAfter t: Int64) -> Int {
        var lo = 0, hi = points.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if points[mid].time < t { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    private func run(from k: Int, through end: Int64) -> ArraySlice<Point> {
        var last = k
        while last + 1 < points.count, points[last + 1].position != nil, points[last + 1].time <= end { last += 1 }
        return points[k...last]
    }

    private func runBackwards(from k: Int, through start: Int64) -> ArraySlice<Point> {
        var first = k
        while first > 0, let v = points[first - 1].position, let next = points[first].position, v < next,
              points[first - 1].time >= start { first -= 1 }
        return points[first...k]
    }

    /// Least-squares line through `points` (all with a position), evaluated at `t`.
    static func fit(_ points: ArraySlice<Point>, at t: Int64) -> Estimate? {
        guard let v0 = points.first?.position else { return nil }
        var n = 0.0, sx = 0.0, sy = 0.0, sxx = 0.0, sxy = 0.0
        for p in points {
            guard let v = p.position else { return nil }
            let x = Double(p.time - t) / 1e9, y = v - v0
            n += 1; sx += x; sy += y; sxx += x * x; sxy += x * y
        }
        let d = n * sxx - sx * sx
        guard n >= 2, d > 0 else { return nil }
        let rate = (n * sxy - sx * sy) / d
        let intercept = (sy - rate * sx) / n
        var residual = 0.0
        for p in points {
            let x = Double(p.time - t) / 1e9
            residual = max(residual, abs(p.position! - v0 - (intercept + rate * x)))
        }
        return Estimate(position: v0 + intercept, rate: rate, points: Int(n), residual: residual)
    }
}
