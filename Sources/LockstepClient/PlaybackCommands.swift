import LockstepPlayerProtocol

/// A command to a player: be at ``itemTimeNs`` at ``hostTimeNs`` (host time, `CLOCK_MONOTONIC`;
/// output latency already folded in), moving at ``rate`` media nanoseconds per host nanosecond
/// from there (0 for a pause). `rate` includes the agent's clock-skew factor (e.g.
/// 1.0000000556): apply it as given.
///
/// SharePlay's `AVDelegatingPlaybackCoordinatorPlaybackControlCommand`: ``item`` is its
/// `expectedCurrentItemIdentifier`, ``originator`` the participant who caused it.
public protocol TimedCommand: Sendable {
    var item: String { get }
    var itemTimeNs: Int64 { get }
    var hostTimeNs: Int64 { get }
    var rate: Double { get }
    var originator: Origin { get }
}

extension TimedCommand {
    /// Where the media should be at `hostNs`: a command that arrives late is joined where the
    /// group is, not where it was.
    public func itemTime(at hostNs: Int64) -> Int64 {
        let moved = (Double(hostNs) - Double(hostTimeNs)) * rate
        // Saturating: a command's numbers are the agent's, but a player may ask about any instant.
        let clamped = max(-9.0e18, min(9.0e18, moved.isFinite ? moved : 0)).rounded()
        let (sum, overflow) = itemTimeNs.addingReportingOverflow(Int64(clamped))
        return overflow ? (clamped > 0 ? .max : .min) : sum
    }
}

/// Start (or keep) playing: present ``itemTimeNs`` at ``hostTimeNs`` at ``rate``. A seek while
/// playing is a play command at the new time (its originator's action is `seek`).
public struct PlayCommand: TimedCommand, Equatable {
    public var item: String
    public var itemTimeNs: Int64
    public var hostTimeNs: Int64
    public var rate: Double
    public var originator: Origin

    public init(item: String, itemTimeNs: Int64, hostTimeNs: Int64, rate: Double, originator: Origin) {
        self.item = item
        self.itemTimeNs = itemTimeNs
        self.hostTimeNs = hostTimeNs
        self.rate = rate
        self.originator = originator
    }
}

/// Stop at ``itemTimeNs`` from ``hostTimeNs`` (rate 0). ``stopped``: the group stopped the item
/// altogether.
public struct PauseCommand: TimedCommand, Equatable {
    public var item: String
    public var itemTimeNs: Int64
    public var hostTimeNs: Int64
    public var rate: Double { 0 }
    public var originator: Origin
    public var stopped: Bool

    public init(item: String, itemTimeNs: Int64, hostTimeNs: Int64, originator: Origin, stopped: Bool = false) {
        self.item = item
        self.itemTimeNs = itemTimeNs
        self.hostTimeNs = hostTimeNs
        self.originator = originator
        self.stopped = stopped
    }
}

/// The group waits for someone (``waitingFor``) before playing from ``itemTimeNs``: hold there
/// and show a spinner. Comes again when the list changes.
public struct BufferingCommand: TimedCommand, Equatable {
    public var item: String
    public var itemTimeNs: Int64
    public var hostTimeNs: Int64
    public var rate: Double { 0 }
    public var originator: Origin
    /// Who the group waits for, and why (`loading`, `buffering`, or a suspension reason).
    public var waitingFor: [WaitingForView]

    public init(item: String, itemTimeNs: Int64, hostTimeNs: Int64, originator: Origin, waitingFor: [WaitingForView]) {
        self.item = item
        self.itemTimeNs = itemTimeNs
        self.hostTimeNs = hostTimeNs
        self.originator = originator
        self.waitingFor = waitingFor
    }
}

/// A drift correction for a player that cannot nudge its rate: be exactly at ``itemTimeNs`` at
/// ``hostTimeNs`` and keep playing at ``rate``. ``errorNs`` is the error corrected (player minus
/// group); the originator is the play command's, with reason `correction`.
public struct SeekCommand: TimedCommand, Equatable {
    public var item: String
    public var itemTimeNs: Int64
    public var hostTimeNs: Int64
    public var rate: Double
    public var originator: Origin
    public var errorNs: Int64

    public init(item: String, itemTimeNs: Int64, hostTimeNs: Int64, rate: Double, originator: Origin, errorNs: Int64) {
        self.item = item
        self.itemTimeNs = itemTimeNs
        self.hostTimeNs = hostTimeNs
        self.rate = rate
        self.originator = originator
        self.errorNs = errorNs
    }
}

/// One of the commands, as the coordinator hands them to its ``PlayerDelegate``.
public enum PlayerCommand: Sendable, Equatable {
    case play(PlayCommand)
    case pause(PauseCommand)
    case buffer(BufferingCommand)
    case seek(SeekCommand)

    /// The command's timing, whichever it is.
    public var timed: any TimedCommand {
        switch self {
        case .play(let c): c
        case .pause(let c): c
        case .buffer(let c): c
        case .seek(let c): c
        }
    }
}

/// At host time ``hostTimeNs`` the player's output was at ``itemTimeNs``: what the player's own
/// clock says, read by the coordinator several times a second while the group plays.
public struct PositionSample: Sendable, Equatable {
    public var itemTimeNs: Int64
    public var hostTimeNs: Int64

    public init(itemTimeNs: Int64, hostTimeNs: Int64) {
        self.itemTimeNs = itemTimeNs
        self.hostTimeNs = hostTimeNs
    }
}
