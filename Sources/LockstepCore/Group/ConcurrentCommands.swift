/// Commands that were concurrent: none of their origins had seen the others when it issued its
/// own. All of them were applied, in stamp order (the order they were issued in, to within the
/// clocks' error); players and `lockstep state` are told, so that nobody wonders where an intent
/// went.
public struct ConcurrentCommands: Equatable, Hashable, Sendable {
    /// One command, as reported.
    public struct Command: Equatable, Hashable, Sendable {
        public var stamp: Stamp
        public var item: ItemID?
        public var action: Action
        /// The player whose user caused it, when a player did.
        public var by: String?
        public init(stamp: Stamp, item: ItemID?, action: Action, by: String? = nil) {
            self.stamp = stamp
            self.item = item
            self.action = action
            self.by = by
        }
    }

    /// The command that arrived last; `with` are the ones it was concurrent with. All in the
    /// order they were applied.
    public var command: Command
    public var with: [Command]

    public init(command: Command, with: [Command]) {
        self.command = command
        self.with = with
    }

    /// Every command of the report, in the order they were applied.
    public var all: [Command] { (with + [command]).sorted { $0.stamp < $1.stamp } }
}
