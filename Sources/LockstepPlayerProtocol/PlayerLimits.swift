/// The ranges of the player protocol's numbers (`Protocol/player-protocol.md` §2). The agent
/// checks every request against them when it decodes it (``PlayerRequest/validate()``) and
/// answers `invalid_field`, naming the field and the range, for anything outside: a buggy player
/// cannot put a number into the agent that its arithmetic was not made for.
public enum PlayerLimits {
    /// `output_latency_ns`, `start_latency_ns`, `sync_tolerance_ns`: at most 10 s.
    public static let latencyNs: ClosedRange<Int64> = 0...10_000_000_000
    /// `position_ns`, `duration_ns`, `propose_position_ns`: at most one year of media.
    public static let positionNs: ClosedRange<Int64> = 0...31_536_000_000_000_000
    /// `rate`: 1/16 to 16 times normal speed.
    public static let rate: ClosedRange<Double> = 0.0625...16
    /// `host_time_ns` of a position report: within ±2⁶² ns (the agent also refuses reports taken
    /// more than ``reportAgeNs`` away from its own host time).
    public static let hostTimeNs: ClosedRange<Int64> = -(1 << 62)...(1 << 62)
    /// How far a position report's `host_time_ns` may be from the agent's host time when it arrives.
    public static let reportAgeNs: Int64 = 60_000_000_000
    /// `sim_clock` (test hook): a jump of at most a day either way…
    public static let simJumpMs: ClosedRange<Double> = -86_400_000...86_400_000
    /// …and a skew of at most ±1,000 ppm.
    public static let simSkewPPM: ClosedRange<Double> = -1_000...1_000
    /// A player's name as the agent keeps it (longer names are cut to 32 bytes in `hello`).
    public static let playerNameBytes: ClosedRange<Int> = 1...32
    /// A suspension reason: 1 to 32 bytes.
    public static let reasonBytes: ClosedRange<Int> = 1...32
}
