/// Event `clock_changed` (topic `clock`): the `clock` result, pushed about once a second, so
/// that a dashboard plots the clocks without asking.
public struct ClockChangedEvent: Codable, Sendable, Equatable {
    public var event = "clock_changed"
    public var clock: ClockResult

    public init(clock: ClockResult) {
        self.clock = clock
    }
}

extension PlayersChangedEvent {
    /// Event `sync_changed` (topic `sync`): every player on every peer with its sync error (the
    /// `players` result), pushed about once a second while some player's error is known. Errors
    /// of players on other peers come from their agents' sync reports, which flow only while
    /// someone subscribes to this topic.
    public static func syncChanged(hostTimeNs: Int64, players: [ParticipantWithItem]) -> PlayersChangedEvent {
        var e = PlayersChangedEvent(hostTimeNs: hostTimeNs, players: players)
        e.event = "sync_changed"
        return e
    }
}
