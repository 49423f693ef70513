/// A change to the group state, for the coordinator and for watchers: the operation that caused
/// it (nil when registers came from a peer's folded state), and the commands it was concurrent
/// with, if any.
public struct GroupChange: Sendable, Equatable {
    public var operation: GroupOperation?
    /// Issued by this node (as opposed to received).
    public var local: Bool
    /// The operation was concurrent with others (all applied; see ``ConcurrentCommands``).
    public var concurrent: ConcurrentCommands?

    public init(operation: GroupOperation?, local: Bool, concurrent: ConcurrentCommands? = nil) {
        self.operation = operation
        self.local = local
        self.concurrent = concurrent
    }
}
