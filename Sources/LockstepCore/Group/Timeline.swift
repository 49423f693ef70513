/// The group timeline for one item: where the media is at any host time.
///
/// An anchor says "at host time `anchorTime` (on the clock of the peer that issued it), the media
/// position is `position`, and from then on it advances at `rate`". Paused and waiting timelines
/// hold still at `position`; `rate` then is the rate playback resumes at, so a pause/play pair
/// keeps the group's chosen speed (rate is first-class state, not always 1×).
///
///     position(t) = position + rate × (t − anchorTime)     while playing
///     position(t) = position                                otherwise
public struct Timeline: Equatable, Hashable, Sendable, Codable {
    public enum Phase: UInt8, Sendable, Codable, CaseIterable, CustomStringConvertible {
        /// Nothing is playing.
        case stopped = 0
        /// Held at `position`.
        case paused = 1
        /// The group wants to play from `position` at `rate` and waits until its participants are ready.
        case waiting = 2
        /// Playing from `anchorTime`.
        case playing = 3

        public var description: String {
            switch self {
            case .stopped: "stopped"
            case .paused: "paused"
            case .waiting: "waiting"
            case .playing: "playing"
            }
        }
    }

    /// Slowest and fastest playback rates the group accepts.
    public static let rateRange: ClosedRange<Double> = 0.0625...16

    public var phase: Phase
    /// Host time (ns) at which this timeline takes effect, on the clock of the peer named by the record.
    public var anchorTime: Int64
    /// Media position (ns) at `anchorTime`.
    public var position: Int64
    /// Playback rate while playing; the rate to resume at otherwise. Always within ``rateRange``.
    public var rate: Double

    public init(phase: Phase, anchorTime: Int64, position: Int64, rate: Double) {
        self.phase = phase
        self.anchorTime = anchorTime
        self.position = max(0, position)
        self.rate = min(max(rate, Timeline.rateRange.lowerBound), Timeline.rateRange.upperBound)
    }

    /// The rate at which the position advances: `rate` while playing, 0 otherwise.
    public var effectiveRate: Double { phase == .playing ? rate : 0 }

    /// Media position (ns) at host time `t` (same clock as `anchorTime`). Before the anchor of a
    /// playing timeline this extrapolates backwards: where a player already on it would be.
    public func position(at t: Int64) -> Int64 {
        guard phase == .playing else { return position }
        return position &+ Int64((Double(t &- anchorTime) * rate).rounded())
    }

    /// The host time (same clock as `anchorTime`) at which a playing timeline reaches `mediaPosition`.
    public func hostTime(atPosition mediaPosition: Int64) -> Int64? {
        guard phase == .playing, rate > 0 else { return nil }
        return anchorTime &+ Int64((Double(mediaPosition &- position) / rate).rounded())
    }

    /// The same timeline with its anchor moved to another clock by `convert` (a peer→local map).
    public func rebased(_ convert: (Int64) -> Int64) -> Timeline {
        var t = self
        t.anchorTime = convert(anchorTime)
        return t
    }
}
