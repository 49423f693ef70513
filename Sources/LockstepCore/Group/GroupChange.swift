/// A change to the group state, for the coordinator and for watchers.
public struct GroupChange: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// An item's timeline changed.
        case item(ItemRecord)
        /// The group's current item changed.
        case current(CurrentRecord)
    }

    public var kind: Kind
    /// Issued by this node (as opposed to received).
    public var local: Bool

    public init(kind: Kind, local: Bool) {
        self.kind = kind
        self.local = local
    }
}
