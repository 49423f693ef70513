/// A command for the replicated state, decided by the coordinator, before the replica stamps it:
/// ``Dissemination/onProposal(_:now:peers:rtt:timelines:)`` gives it its ``Stamp`` and spreads it.
public enum Proposal: Sendable, Equatable {
    /// The group's item (nil: the group plays nothing).
    case current(ItemID?, ItemMetadata)
    /// An item's timeline, on this node's clock (the record carries it on its origin's clock,
    /// which is this node's).
    case item(ItemID, ItemMetadata, Timeline<LocalTime>, Action, CommandReason?)
}
