/// A suspension this player began (``PlaybackCoordinator/beginSuspension(for:)``, SharePlay's
/// `AVCoordinatedPlaybackSuspension`): the player neither affects the group nor is affected by it
/// until every suspension it holds has ended. It survives an agent restart (the coordinator
/// begins it again).
public struct Suspension: Sendable {
    let coordinator: PlaybackCoordinator
    let key: Int
    public let reason: String

    /// Ends it; with `proposingNewTime` (item ns) the whole group moves there (the user let go of
    /// a scrubber). When the last suspension ends the player gets the group's timeline.
    public func end(proposingNewTime itemTimeNs: Int64? = nil) async throws {
        try await coordinator.endSuspension(key: key, proposingNewTime: itemTimeNs)
    }

    /// Whether it is still open (the agent may end it, e.g. when the player unloads).
    public var isOpen: Bool {
        get async { await coordinator.isOpen(suspension: key) }
    }
}
