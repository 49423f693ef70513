/// How far in the future a play, seek or rate command is anchored.
///
/// Every peer must learn of the command before its instant and have time to act, so the lead is
/// the worst, over the peers taking part, of
///
///     round trip to the peer + its clock's error bound + its player's start latency
///
/// plus a margin that covers one retransmission of a lost datagram; then clamped between a
/// floor and a cap. The round trip (not half of it) stands in for the one-way delay, because a
/// path may be asymmetric. It is the longer of the clock exchanges' (kernel timestamps: the
/// wire alone) and the peer's recent acknowledgements of this node's operations (``AckDelays``:
/// the wire and the peer's agent taking the datagram in, which on a loaded or slow device is
/// most of it). Jellyfin uses a fixed max(2 × ping, 500 ms); on a LAN this gives tens of
/// milliseconds. A peer that still learns of a command late joins the timeline where it is.
public enum LeadTime {
    public struct Configuration: Sendable, Equatable {
        public var floor: TimeSpan = .milliseconds(15)
        public var cap: TimeSpan = .seconds(2)
        /// Covers one retransmission after a loss (the first waits at least 10 ms).
        public var margin: TimeSpan = .milliseconds(15)

        public init() {}
    }

    /// One peer's part in the lead.
    public struct Term: Sendable, Equatable {
        public var roundTrip: TimeSpan
        public var clockBound: TimeSpan
        public var startLatency: TimeSpan

        public init(roundTrip: TimeSpan, clockBound: TimeSpan, startLatency: TimeSpan) {
            self.roundTrip = roundTrip
            self.clockBound = clockBound
            self.startLatency = startLatency
        }

        /// The term's sum (saturating: a peer's wild numbers give the cap, never a trap).
        public var total: TimeSpan { roundTrip + clockBound + startLatency }
    }

    public static func lead(_ terms: [Term], configuration: Configuration) -> TimeSpan {
        let worst = terms.map(\.total).max() ?? .zero
        return min(max(worst + configuration.margin, configuration.floor), configuration.cap)
    }
}
