/// One command in the group's history: what a user (or a player, or the coordinator) did, when,
/// and what its origin had seen. Operations are the replicated unit; the group state is their
/// fold in ``Stamp`` order (``GroupState/apply(_:)``).
///
/// Times: `at` (when the command takes effect) is on the clock of `basis`, the group member
/// with the smallest peer id that the origin had a clock estimate of (``GroupClock``), so that
/// every replica composes commands from different origins with the same arithmetic. `originAt`
/// is the same instant on the origin's own clock, for a replica that can estimate the origin's
/// clock but not the basis's. `result` is the timeline the origin computed against the state it
/// had seen (on `basis`): the fold recomputes the command on the state it folds into, and uses
/// `result` only when that state's clock is another basis, where its arithmetic would mix clocks.
public struct GroupOperation: Hashable, Sendable, Codable {
    /// An operation names at most this many heads; a wider frontier is carried by a `join`
    /// operation issued just before (so that an operation with an item always fits a datagram).
    public static let maxInlineHeads = 8
    /// A `join` carries at most this many (a wider frontier takes a chain of joins).
    public static let maxHeads = Limits.heads

    public var stamp: Stamp
    /// The origin's causal frontier when it issued this: the latest operations it had seen,
    /// none in the past of another. Its own previous operation is always in their past (or
    /// among them).
    public var heads: [OperationID]
    /// The item it acts on (nil only for `stop` with no item and for `join`).
    public var item: ItemID?
    public var command: OperationCommand
    /// Why, when not a plain user command.
    public var reason: CommandReason?
    /// The player whose user caused it (its name, at most ``PlayerStatus/maxNameBytes``), when a
    /// player did; nil for the CLI, tools and the agent itself.
    public var by: String?
    public var basis: PeerID
    public var at: PeerTime
    public var originAt: PeerTime
    /// The origin's error bound converting `originAt` to `at` (zero when the origin is the basis).
    public var basisBound: TimeSpan
    public var result: Timeline<PeerTime>?

    public init(
        stamp: Stamp, heads: [OperationID], item: ItemID?, command: OperationCommand, reason: CommandReason? = nil, by: String? = nil,
        basis: PeerID, at: PeerTime, originAt: PeerTime, basisBound: TimeSpan = .zero, result: Timeline<PeerTime>? = nil
    ) {
        self.stamp = stamp
        self.heads = heads
        self.item = item
        self.command = command
        self.reason = reason
        self.by = by.map { $0.truncated(toUTF8: PlayerStatus.maxNameBytes) }.flatMap { $0.isEmpty ? nil : $0 }
        self.basis = basis
        self.at = at
        self.originAt = originAt
        self.basisBound = basisBound
        self.result = result
    }

    public var id: OperationID { stamp.id }
}
