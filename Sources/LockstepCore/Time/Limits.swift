/// The ranges a number from outside must lie in before the core accepts it: the edge checks of
/// the peer decoder (`LockstepPeerWire`) and of the agent use these, and `Protocol/peer-protocol.md`
/// §4 states them. Inside these ranges no arithmetic of the core comes near overflow (and its
/// arithmetic saturates anyway, see ``TimeSpan``), so a value that passes can never trap an agent.
public enum Limits {
    /// Any instant on any clock: within ±2⁶² ns (±146 years) of that clock's zero. Monotonic
    /// clocks count from boot; simulated device clocks are offset by seconds.
    public static let instantNs: ClosedRange<Int64> = -(1 << 62)...(1 << 62)
    /// A latency a player or peer declares (output, start, report precision): at most 10 s.
    public static let latencyNs: ClosedRange<Int64> = 0...(10 * 1_000_000_000)
    /// A media position or duration: at most ``MediaPosition/max`` (one year).
    public static let positionNs: ClosedRange<Int64> = 0...MediaPosition.max.ns
    /// A playback rate.
    public static let rate: ClosedRange<Double> = 0.0625...16
    /// An error bound on a converted anchor (an operation's basis bound, a register's
    /// alternate anchor): at most 10 s.
    public static let relayBoundNs: ClosedRange<Int64> = 0...(10 * 1_000_000_000)
    /// A counter that only grows (operation numbers, participant versions) and an
    /// agent's incarnation: at most 2⁶², far from `UInt64.max` however long a group lives
    /// (2⁶² commands at a thousand a second take 146 million years).
    public static let counter: ClosedRange<UInt64> = 0...(1 << 62)
    /// How far an operation's stamp may be ahead of the most advanced clock this replica knows:
    /// more is a poisoned stamp (every later one would follow it), or a clock not measured yet
    /// (anti-entropy offers the operation again once it is).
    public static let stampLeadNs: Int64 = 10 * 1_000_000_000
    /// How many heads an operation may name (see ``GroupOperation/maxHeads``).
    public static let heads = 40
    /// A clock report's offset magnitude, ns.
    public static let reportOffsetNs: Double = 0x1p62
    /// A clock report's error bounds: at most 1,000 s (a bound that wide says "unknown").
    public static let reportBoundNs: ClosedRange<Double> = 0...1e12
    /// A clock report's skew and bound growth, in ppm: a clock off by more than 1 % is broken.
    public static let reportSkewPPM: ClosedRange<Double> = -10_000...10_000
    public static let reportGrowthPPM: ClosedRange<Double> = 0...1_000_000
    /// A player's sync error in a sync report: within a media position's range either way.
    public static let syncErrorNs: ClosedRange<Int64> = -MediaPosition.max.ns...MediaPosition.max.ns
    /// A clock result's round trip (`t4 − t1`): at most 10 s, past any exchange timeout.
    public static let clockResultRoundTripNs: Int64 = 10 * 1_000_000_000
    /// A clock report's round trip: at most 10 s.
    public static let reportDelayNs: ClosedRange<Int64> = 0...(10 * 1_000_000_000)
    /// A peer's published intake (`intake`): at most 2 s, the lead's cap (``LeadTime/Configuration/cap``).
    public static let intakeNs: ClosedRange<Int64> = 0...(2 * 1_000_000_000)
}
