/// Event `clock_changed` (topic `clock`): the `clock` result, pushed about once a second, so
/// that a dashboard plots the clocks without asking.
public struct ClockChangedEvent: Codable, Sendable, Equatable {
    public var event = "clock_changed"
    public var clock: ClockResult

    public init(clock: ClockResult) {
        self.clock = clock
    }
}

/// Event `sync_changed` (topic `sync`): every player on every peer with its sync error (the
/// `players` result), pushed about once a second while some player's error is known. Errors of
/// players on other peers come from their agents' sync reports, which flow only while someone
/// subscribes to this topic.
public struct SyncChangedEvent: Codable, Sendable, Equatable {
    public var event = "sync_changed"
    public var hostTimeNs: Int64
    public var players: [ParticipantWithItem]

    public init(hostTimeNs: Int64, players: [ParticipantWithItem]) {
        self.hostTimeNs = hostTimeNs
        self.players = players
    }

    enum CodingKeys: String, CodingKey {
        case event
        case hostTimeNs = "host_time_ns"
        case players
    }
}
