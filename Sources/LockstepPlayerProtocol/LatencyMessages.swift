// Output latencies the agent keeps per player name (`latency_set`, `latency_list`): a TV's or a
// Bluetooth speaker's delay, measured once, applied to the player of that name at every hello
// that does not give its own `output_latency_ns`.

/// `latency_set`: keep `output_latency_ns` for the player called `name`; without it, forget it.
public struct LatencySetRequest: Codable, Sendable, Equatable, PlayerRequest {
    /// The player's name, as it says in `hello` (1 to 32 bytes, the length the agent keeps).
    public var name: String
    public var outputLatencyNs: Int64?

    public init(name: String, outputLatencyNs: Int64?) {
        self.name = name
        self.outputLatencyNs = outputLatencyNs
    }

    enum CodingKeys: String, CodingKey {
        case name
        case outputLatencyNs = "output_latency_ns"
    }

    public func validate() throws(ProtocolError) {
        guard PlayerLimits.playerNameBytes.contains(name.utf8.count) else {
            throw ProtocolError(.invalidField, "name must be \(PlayerLimits.playerNameBytes.lowerBound)...\(PlayerLimits.playerNameBytes.upperBound) bytes")
        }
        try check("output_latency_ns", outputLatencyNs, within: PlayerLimits.latencyNs)
    }
}

/// One kept output latency.
public struct SavedLatency: Codable, Sendable, Equatable {
    public var name: String
    public var outputLatencyNs: Int64

    public init(name: String, outputLatencyNs: Int64) {
        self.name = name
        self.outputLatencyNs = outputLatencyNs
    }

    enum CodingKeys: String, CodingKey {
        case name
        case outputLatencyNs = "output_latency_ns"
    }
}

/// The reply to `latency_list` and `latency_set`: every kept latency, by name.
public struct LatencyListResult: Codable, Sendable, Equatable {
    public var latencies: [SavedLatency]

    public init(latencies: [SavedLatency]) {
        self.latencies = latencies
    }
}
