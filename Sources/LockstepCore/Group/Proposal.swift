/// A command for the group, decided by the coordinator, before the replica makes it an
/// ``GroupOperation``: ``Dissemination/onProposal(_:now:peers:rtt:timelines:)`` stamps it, writes its
/// instants on the group's basis clock, applies it and spreads it.
public struct Proposal: Sendable, Equatable {
    /// The item it acts on (nil: a stop with no item).
    public var item: ItemID?
    public var command: OperationCommand
    public var reason: CommandReason?
    /// The player whose user caused it, when a player did.
    public var by: String?
    /// When it takes effect, on this node's clock.
    public var at: LocalTime
    /// The timeline the coordinator computed from the state it saw, anchored at `at`, when the
    /// command changes one (see ``GroupOperation/result``).
    public var result: Timeline<LocalTime>?

    public init(item: ItemID?, command: OperationCommand, reason: CommandReason? = nil, by: String? = nil, at: LocalTime, result: Timeline<LocalTime>? = nil) {
        self.item = item
        self.command = command
        self.reason = reason
        self.by = by
        self.at = at
        self.result = result
    }
}
