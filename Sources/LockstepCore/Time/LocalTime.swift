/// An instant on this node's own clock: the agent's device clock (the host's `CLOCK_MONOTONIC` in
/// production; a simulated clock in the lab and in simulations). Every input of the core carries
/// the current local time (`now`), and every time it keeps about itself is local.
public struct LocalTime: ClockInstant {
    public var ns: Int64

    @inline(__always)
    public init(ns: Int64) {
        self.ns = ns
    }

    /// A reading of this node's clock that comes back as a ``PeerTime``: a record this node
    /// originated (its anchor is on its origin's clock, which is ours). The reading is unchanged;
    /// only the point of view is. Conversions between two *different* clocks go through a
    /// ``ClockEstimate``.
    @inline(__always)
    public init(ours t: PeerTime) {
        self.ns = t.ns
    }
}
