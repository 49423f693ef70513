/// How far in the future a play, seek or rate command is anchored.
///
/// Every peer must learn of the command before its instant and have time to act, so the lead is
/// the worst, over the peers taking part, of
///
///     round trip to the peer + its clock's error bound + its player's start latency
///
/// plus a margin that covers one retransmission of a lost datagram; then clamped between a
/// floor and a cap. The round trip (not half of it) stands in for the one-way delay, because a
/// path may be asymmetric. Jellyfin uses a fixed max(2 × ping, 500 ms); on a LAN this gives tens
/// of milliseconds. A peer that still learns of a command late joins the timeline where it is.
public enum LeadTime {
    public struct Configuration: Sendable, Equatable {
        public var floorNs: Int64 = 15 * Nanos.millisecond
        public var capNs: Int64 = 2 * Nanos.second
        /// Covers one retransmission after a loss (the first waits at least 10 ms).
        public var marginNs: Int64 = 15 * Nanos.millisecond

        public init() {}
    }

    /// One peer's part in the lead.
    public struct Term: Sendable, Equatable {
        public var roundTripNs: Int64
        public var clockBoundNs: Int64
        public var startLatencyNs: Int64

        public init(roundTripNs: Int64, clockBoundNs: Int64, startLatencyNs: Int64) {
            self.roundTripNs = roundTripNs
            self.clockBoundNs = clockBoundNs
            self.startLatencyNs = startLatencyNs
        }

        public var total: Int64 { roundTripNs + clockBoundNs + startLatencyNs }
    }

    public static func lead(_ terms: [Term], configuration: Configuration) -> Int64 {
        let worst = terms.map(\.total).max() ?? 0
        return min(max(worst + configuration.marginNs, configuration.floorNs), configuration.capNs)
    }
}
