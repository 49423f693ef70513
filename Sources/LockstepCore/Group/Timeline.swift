/// The group timeline for one item: where the media is at any instant of one clock.
///
/// An anchor says "at `anchorTime` (on the clock `Instant` names), the media position is
/// `position`, and from then on it advances at `rate`". Paused and waiting timelines hold still
/// at `position`; `rate` then is the rate playback resumes at, so a pause/play pair keeps the
/// group's chosen speed (rate is first-class state, not always 1×).
///
///     position(t) = position + rate × (t − anchorTime)     while playing
///     position(t) = position                                otherwise
///
/// Records carry `Timeline<PeerTime>` (on their origin's clock); what players follow is the same
/// timeline moved onto this node's clock, a `Timeline<LocalTime>`.
public struct Timeline<Instant: ClockInstant>: Equatable, Hashable, Sendable, Codable {
    /// Slowest and fastest playback rates the group accepts.
    public static var rateRange: ClosedRange<Double> { Limits.rate }

    public var phase: TimelinePhase
    /// When this timeline takes effect, on its clock.
    public var anchorTime: Instant
    /// Media position at `anchorTime`.
    public var position: MediaPosition
    /// Playback rate while playing; the rate to resume at otherwise. Always within ``rateRange``.
    public var rate: Double

    public init(phase: TimelinePhase, anchorTime: Instant, position: MediaPosition, rate: Double) {
        self.phase = phase
        self.anchorTime = anchorTime
        self.position = position
        self.rate = rate.isNaN ? 1 : min(max(rate, Limits.rate.lowerBound), Limits.rate.upperBound)
    }

    /// Media position at `t` (same clock as `anchorTime`). Before the anchor of a playing
    /// timeline this extrapolates backwards: where a player already on it would be.
    public func position(at t: Instant) -> MediaPosition {
        guard phase == .playing else { return position }
        return position.advanced(by: t - anchorTime, rate: rate)
    }

    /// The same timeline on another clock, its anchor moved by the caller.
    public func moved<Other: ClockInstant>(to anchor: Other) -> Timeline<Other> {
        Timeline<Other>(phase: phase, anchorTime: anchor, position: position, rate: rate)
    }
}

/// What a timeline does.
public enum TimelinePhase: UInt8, Sendable, Codable, CaseIterable, CustomStringConvertible {
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
