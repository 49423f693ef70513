/// What a ``Node`` asks its shell to do.
public enum NodeDirective: Sendable, Equatable {
    /// Send a message.
    case send(PeerMessage, to: Endpoint)
    /// Send a clock request: the shell stamps `t1` as late as it can before the datagram leaves,
    /// and tells the node which `t1` it stamped (``Node/onClockRequestSent(exchange:to:t1:)``).
    /// Exchange 0 is a probe. `form`: plain, or interleaved with what it carries.
    case sendClockRequest(exchange: UInt32, to: Endpoint, form: RequestForm = .plain)
    /// Answer a clock request (`echo` is its `t1`, `t2` when it arrived): the shell stamps `t3`.
    case sendClockReply(exchange: UInt32, echo: Int64, t2: LocalTime, to: Endpoint, form: ReplyForm = .plain)
    /// A membership change, for logs and watchers.
    case membership(Membership.Event)
    /// The group state changed: an operation was applied (from this peer or another).
    case groupChanged(GroupChange)
    /// A peer's players changed.
    case participantsChanged
    /// Tell a local player something.
    case tellPlayer(UInt32, PlayerInstruction)
    /// The reply to the request being handled (always first among the directives it caused).
    case reply(RequestOutcome)
    /// An authenticated message was refused by the protocol logic (counted by the shell).
    case dropped(DropReason, from: PeerID)
    /// This device's clock jumped by `by` behind the agent's back (most peers' clocks seemed to
    /// jump by `−by` at once): the shell steps its device clock back by `by`, so that the clock
    /// the group sees stays continuous, then calls ``Node/onLocalClockCorrected(now:)``.
    case ownClockStepped(by: TimeSpan)
}

/// Why the protocol logic refused an authenticated message (the shell counts each as `dropped_<reason>`).
public enum DropReason: String, Sendable, Equatable {
    /// An operation stamped far ahead of every known clock (review finding H2's heir).
    case stampTooFarAhead = "stamp_too_far_ahead"
    /// An operation naming impossible heads.
    case invalidHeads = "invalid_heads"
    /// A stale operation of a replica that is no longer a member.
    case retiredReplica = "retired_replica"
    /// A participant record about this node, newer than its own.
    case speaksForUs = "speaks_for_us"
    /// A checkpoint vector whose registers have not all arrived (sent again next round).
    case checkpointIncomplete = "checkpoint_incomplete"
    /// A clock reply echoing a `t1` this node did not send for its exchange (replayed or forged).
    case wrongEcho = "wrong_echo"
    /// A `goodbye` or a clock report (what one peer says that changes how others see a third)
    /// sealed under the group key, which any member can put any sender's id on (review finding
    /// M4): taken only sealed pairwise or under a session.
    case notProven = "not_proven"
}
