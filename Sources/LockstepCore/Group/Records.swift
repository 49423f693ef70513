/// What a command did, as the peers and players are told ("who changed what").
public enum Action: UInt8, Sendable, Codable, CaseIterable, CustomStringConvertible {
    case load = 1
    case play = 2
    case pause = 3
    case seek = 4
    case setRate = 5
    case stop = 6
    /// Playback started automatically because every participant became ready (or waiting timed out).
    case start = 7

    public var description: String {
        switch self {
        case .load: "load"
        case .play: "play"
        case .pause: "pause"
        case .seek: "seek"
        case .setRate: "rate"
        case .stop: "stop"
        case .start: "start"
        }
    }

    public init?(name: String) {
        guard let a = Action.allCases.first(where: { $0.description == name }) else { return nil }
        self = a
    }
}

/// The replicated register for one item: its timeline and the command that set it.
///
/// Records merge by keeping the larger ``Stamp``; that is the whole merge rule.
public struct ItemRecord: Equatable, Hashable, Sendable, Codable {
    public static let maxReasonBytes = 64

    public var item: ItemID
    public var metadata: ItemMetadata
    /// The timeline; its `anchorTime` is on the clock of `stamp.origin`.
    public var timeline: Timeline
    public var action: Action
    /// Why the origin issued it, when not a plain user command: "ready", "timeout",
    /// "suspension-ended", "play-immediately", or a player's own reason. Informational only.
    public var reason: String?
    public var stamp: Stamp
    /// What the origin had seen when it issued the command.
    public var version: VersionVector

    public init(item: ItemID, metadata: ItemMetadata = .init(), timeline: Timeline, action: Action, reason: String? = nil, stamp: Stamp, version: VersionVector) {
        self.item = item
        self.metadata = metadata
        self.timeline = timeline
        self.action = action
        self.reason = reason.map { $0.truncated(toUTF8: ItemRecord.maxReasonBytes) }
        self.stamp = stamp
        self.version = version
    }
}

/// The replicated register naming the item the group plays (SharePlay's current activity).
/// `item == nil` means the group was stopped.
public struct CurrentRecord: Equatable, Hashable, Sendable, Codable {
    public var item: ItemID?
    public var metadata: ItemMetadata
    public var stamp: Stamp
    public var version: VersionVector

    public init(item: ItemID?, metadata: ItemMetadata = .init(), stamp: Stamp, version: VersionVector) {
        self.item = item
        self.metadata = metadata
        self.stamp = stamp
        self.version = version
    }
}
