/// A record's anchor on the relaying sender's clock, for receivers with no estimate of the origin's clock.
public struct RelayAnchor: Equatable, Hashable, Sendable, Codable {
    /// The record's anchor, converted to the relay's clock.
    public var anchorTime: PeerTime
    /// The relay's error bound on that conversion (at most ``Limits/relayBoundNs``).
    public var errorBound: TimeSpan

    public init(anchorTime: PeerTime, errorBound: TimeSpan) {
        self.anchorTime = anchorTime
        self.errorBound = errorBound
    }

    // JSON (test vectors, debugging) names nanosecond fields with their unit.
    enum CodingKeys: String, CodingKey {
        case anchorTime
        case errorBound = "errorBoundNs"
    }
}
