/// Every message peers exchange, inside a sealed envelope. Byte layouts are in
/// `Protocol/peer-protocol.md` (encoded by `LockstepPeerWire`); `Protocol/vectors/peer-messages.json`
/// pins them byte for byte.
///
/// Times are typed from the *receiver's* point of view: a time on the sender's clock is a
/// ``PeerTime``. A reply echoes the requester's `t1` as an opaque `echo` that the requester only
/// compares with what it sent (RFC 5905's origin check): it is never used as a time.
public enum PeerMessage: Equatable, Sendable {
    /// t1: the requester's clock when it sent this.
    case clockRequest(exchange: UInt32, t1: PeerTime)
    /// `echo` is the request's `t1`, copied; t2 when the request arrived, t3 when this reply
    /// left, on the replier's clock.
    case clockReply(exchange: UInt32, echo: Int64, t2: PeerTime, t3: PeerTime)
    /// Two-step replies: the kernel's transmit time of the reply to `exchange` (whose `t1` it
    /// echoes), which the reply's own `t3` (stamped before sending) can only approximate.
    case clockFollowUp(exchange: UInt32, echo: Int64, t3: PeerTime)
    /// The requester's half of a finished exchange, for the replier: the request to `exchange`
    /// (whose `t1` as sent it echoes) really left at `t1`, and the reply arrived at `t4`, both on
    /// the requester's clock. With its own receive and transmit times the replier has the same
    /// four timestamps, so one exchange measures the pair both ways.
    case clockResult(exchange: UInt32, echo: Int64, t1: PeerTime, t4: PeerTime)
    /// A clock request in interleaved form (NTP's interleaved mode, RFC 5905 §9.1): besides its
    /// own `t1`, the requester's half of its previous exchange with the receiver (what a
    /// ``clockResult(exchange:echo:t1:t4:)`` would say), if one is owed. Answered by an
    /// ``interleavedReply(exchange:echo:t2:t3:followUp:)``.
    case interleavedRequest(exchange: UInt32, t1: PeerTime, result: ExchangeResult?)
    /// A clock reply in interleaved form: besides its own times, when the replier's previous
    /// reply in interleaved form to the requester really left (what a
    /// ``clockFollowUp(exchange:echo:t3:)`` would say), if its kernel said. Two datagrams per
    /// exchange rather than four, each sample one exchange later.
    case interleavedReply(exchange: UInt32, echo: Int64, t2: PeerTime, t3: PeerTime, followUp: ClockFollowUp?)
    /// Introduces the sender (its human name); `wantsReply` asks for a hello back.
    case hello(name: String, wantsReply: Bool)
    /// Where the sender reaches some of its peers, sorted by peer id, unique, each passable
    /// (``PeerAddress/isPassable(_:)``; at most ``maxPeerAddresses`` per message, more in
    /// several): sent to a peer that has just become reachable, so that it reaches the rest of
    /// the group without waiting for DNS-SD.
    case peerAddresses([PeerAddress])
    /// The sender is shutting down.
    case goodbye
    /// An operation of the group's history. `wantsAck` asks for an ``ack(_:)``.
    case operation(GroupOperation, wantsAck: Bool)
    /// An item register of the sender's group state, for a replica whose state differs and that
    /// lacks operations the sender has folded (a device that joined later).
    case itemRegister(ItemRecord)
    /// The sender's current-item register, likewise.
    case currentRegister(CurrentRecord)
    /// Which operations the registers sent with it include (part of the sender's checkpoint
    /// vector: at most ``maxCheckpointEntries`` per message, more in several), and the
    /// fingerprint of those registers (the sender's state): the receiver takes the vector only
    /// once it holds every one of them, so that it never counts as had operations whose effect
    /// it lacks (a register lost on the way).
    case checkpointVector([VersionVector.Entry], fingerprint: UInt64)
    /// The operation with this id arrived.
    case ack(OperationID)
    /// Anti-entropy: which operations the sender has, and a fingerprint of its state.
    /// `wantsReply` asks the receiver for its digest back.
    case digest(GroupDigest, wantsReply: Bool)
    /// Anti-entropy of participant records: the ones the sender holds, sorted by peer (at most
    /// ``maxParticipantDigests`` per message; more go in several). A part names every record the
    /// sender holds of the peers after `after` (from the first, when nil) up to its last entry
    /// when `more` parts follow, else to the end: so the receiver answers only what that range
    /// lacks, not what another part names.
    case participantDigest([ParticipantDigest], after: PeerID? = nil, more: Bool = false, wantsReply: Bool)
    /// A peer's players.
    case participant(ParticipantRecord)
    /// The sender's clock estimates of its peers, for the mesh's closure checks.
    case clockReport(ClockReport)
    /// The sender's players' sync errors, or a request for the receiver's (see ``SyncReport``).
    case syncReport(SyncReport)
    /// How long operations pushed by their origins lately took to reach the sender, from their
    /// stamp to their arrival (its longest recent intake, with headroom; zero: none lately):
    /// an origin that has not timed the sender's acknowledgements anchors a command at least
    /// that far ahead (``AckDelays``). Within ``Limits/intakeNs``.
    case intake(TimeSpan)
    /// The group key of an epoch, and the devices removed from the group as the sender knows
    /// them; sent pairwise (sealed under the key the two devices share), never under a group key.
    case epochKey(epoch: UInt32, key: [UInt8], removed: [PeerID])
    /// The sender's device key (its peer id derives from it) and name: holders of the group's
    /// key announce themselves so that members can admit them, and later remove them.
    case memberKey(key: [UInt8], name: String)
    /// A per-pair session's first half: the sender's ephemeral X25519 key (pairwise only).
    case sessionOffer(ephemeral: [UInt8])
    /// Its second half: the answerer's ephemeral key, and the offer's it answers (pairwise only).
    case sessionAnswer(ephemeral: [UInt8], offer: [UInt8])
    /// The key of this epoch is installed.
    case keyAck(epoch: UInt32)

    public static let maxNameBytes = 64
    public static let maxParticipantDigests = 40
    public static let maxCheckpointEntries = 40
    public static let maxReportEntries = 12
    /// Entries of one `peer_addresses` (35 bytes each at most: a datagram stays under a kilobyte).
    public static let maxPeerAddresses = 24
    /// Removals carried by one `epoch_key` (the newest roster's removals beyond this travel
    /// with later keys; see ``Roster``).
    public static let maxRemovedPerKey = 64
}
