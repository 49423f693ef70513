/// A peer's own (direct) estimates of its peers' clocks, on its own clock, for the mesh's
/// closure checks (see ``MeshClock``).
public struct ClockReport: Equatable, Sendable, Codable {
    public struct Entry: Equatable, Sendable, Codable {
        public var peer: PeerID
        /// The target's incarnation when measured: a report about an earlier life is stale.
        public var incarnation: UInt64
        /// Target minus reporter, on the reporter's clock.
        public var estimate: ReportedEstimate

        public init(peer: PeerID, incarnation: UInt64, estimate: ReportedEstimate) {
            self.peer = peer
            self.incarnation = incarnation
            self.estimate = estimate
        }
    }

    public var entries: [Entry]

    public init(entries: [Entry]) {
        self.entries = entries
    }
}
