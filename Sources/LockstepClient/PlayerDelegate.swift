import LockstepPlayerProtocol

/// The player's side of a ``PlaybackCoordinator`` (SharePlay's
/// `AVDelegatingPlaybackCoordinatorPlaybackControlDelegate`): what a player implements to be
/// coordinated.
///
/// Commands are issued one at a time, in order: returning from the function is the completion
/// handler. A timed command overtaken by a newer one before it was issued is dropped. A
/// command's `hostTimeNs` is normally ahead of now by at least the player's start latency; if it
/// is already past, join where the group is (`command.itemTime(at: now)`). The player must not
/// act on its own UI's play/pause/seek: it asks the coordinator (`coordinateRateChange`,
/// `coordinateSeek`) and waits for the command, which comes to every player for the same instant,
/// this one included.
///
/// Only ``play(_:)``, ``pause(_:)`` and ``currentPosition()`` are required.
public protocol PlayerDelegate: Sendable {
    /// Present `command.itemTimeNs` at `command.hostTimeNs` and play at `command.rate`.
    func play(_ command: PlayCommand) async
    /// Be paused at `command.itemTimeNs` from `command.hostTimeNs`.
    func pause(_ command: PauseCommand) async
    /// The group waits for someone: hold at `command.itemTimeNs` (default: a pause).
    func buffer(_ command: BufferingCommand) async
    /// Drift correction for a player without the `rate` capability: be exactly at
    /// `command.itemTimeNs` at `command.hostTimeNs`, keep playing (default: a play command).
    func seek(_ command: SeekCommand) async
    /// Drift correction for a player with the `rate` capability: play at `rate` from now; the
    /// coordinator calls it again with the timeline's rate when the nudge ends (default: nothing).
    func setRate(_ rate: Double) async
    /// The player's own clock: where its output is (item time) at which host time, read as
    /// close together as the player can; nil when it cannot tell. Called several times a second
    /// while the group plays; keep it quick.
    func currentPosition() async -> PositionSample?
}

extension PlayerDelegate {
    public func buffer(_ command: BufferingCommand) async {
        await pause(PauseCommand(item: command.item, itemTimeNs: command.itemTimeNs, hostTimeNs: command.hostTimeNs, originator: command.originator))
    }

    public func seek(_ command: SeekCommand) async {
        await play(PlayCommand(item: command.item, itemTimeNs: command.itemTimeNs, hostTimeNs: command.hostTimeNs, rate: command.rate, originator: command.originator))
    }

    public func setRate(_ rate: Double) async {}
}
