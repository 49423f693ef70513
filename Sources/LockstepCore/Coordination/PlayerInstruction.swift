/// What the coordinator tells a local player. Times are on the local clock; the shell moves them
/// to the host clock players speak.
public enum PlayerInstruction: Sendable, Equatable {
    /// Be at `position` with `rate` at `at` (output latency already folded in), in `phase`;
    /// `record` is the command that set it (who and why).
    case timeline(item: ItemID, phase: TimelinePhase, position: MediaPosition, rate: Double, at: LocalTime, record: ItemRecord)
    /// The group waits (for the players listed) before playing from `position`: hold there from
    /// `at` (which is now or soon, when a playing group is being held).
    case wait(item: ItemID, position: MediaPosition, at: LocalTime, waitingFor: [WaitingFor], record: ItemRecord)
    /// A correction to stay on the timeline.
    case correction(SyncPolicy.Correction)
    /// Who else plays this item, and how they are doing.
    case participants(item: ItemID, [ParticipantInfo])
    /// The group's item changed (the player may follow it or not).
    case itemProposed(CurrentRecord)
    /// The player entered or left group playback.
    case groupPlayback(active: Bool, reason: GroupPlaybackReason)
    /// A suspension of this player began or ended.
    case suspension(began: Bool, id: UInt32, reason: SuspensionReason, imposed: Bool)
    /// Commands from different places crossed; all were applied, in this order.
    case concurrent(ConcurrentCommands)
}

/// Why a player is in group playback or not.
public enum GroupPlaybackReason: Sendable, Equatable {
    /// It follows the group's timeline for this item.
    case following(ItemID)
    /// It plays for its own user alone.
    case solo
    /// It has no item.
    case noItem
    /// It is suspended, for these reasons.
    case suspended([SuspensionReason])
    /// The group has no timeline for its item yet.
    case noTimelineYet
}
