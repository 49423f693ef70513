/// An instant on some peer's clock: the clock of the peer named beside it (a message's sender, a
/// record's origin, a report's reporter). Times in peer messages and in replicated records are
/// `PeerTime`s; they become ``LocalTime``s only through a ``ClockEstimate`` of that peer's clock.
public struct PeerTime: ClockInstant {
    public var ns: Int64

    @inline(__always)
    public init(ns: Int64) {
        self.ns = ns
    }

    /// This node's reading as the other peers see it: a time it sends, or the anchor of a record
    /// it originates. The reading is unchanged; only the point of view is.
    @inline(__always)
    public init(ours t: LocalTime) {
        self.ns = t.ns
    }
}
