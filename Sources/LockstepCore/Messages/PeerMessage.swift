/// Every message peers exchange, inside a sealed envelope. Byte layouts are in
/// `Protocol/peer-protocol.md` (encoded by `LockstepWire`); `Protocol/vectors/peer-messages.json`
/// pins them byte for byte.
public enum PeerMessage: Equatable, Sendable {
    /// t1: the requester's clock when it sent this.
    case clockRequest(exchange: UInt32, t1: Int64)
    /// t1 echoed; t2 when the request arrived, t3 when this reply left, on the replier's clock.
    case clockReply(exchange: UInt32, t1: Int64, t2: Int64, t3: Int64)
    /// Two-step replies: the kernel's transmit time of the reply to `exchange` (whose `t1` it
    /// echoes), which the reply's own `t3` (stamped before sending) can only approximate.
    case clockFollowUp(exchange: UInt32, t1: Int64, t3: Int64)
    /// Introduces the sender (its human name); `wantsReply` asks for a hello back.
    case hello(name: String, wantsReply: Bool)
    /// The sender is shutting down.
    case goodbye
    /// A timeline record; `relay` re-expresses its anchor on the sender's clock when the sender
    /// is not the record's origin. `wantsAck` asks for an ``ack(stamp:)``.
    case itemRecord(ItemRecord, relay: RelayAnchor?, wantsAck: Bool)
    /// The group's current item.
    case currentRecord(CurrentRecord, wantsAck: Bool)
    /// The record with this stamp arrived.
    case ack(stamp: Stamp)
    /// Anti-entropy: what the sender holds. `wantsReply` asks the receiver for its digest back.
    case digest(GroupDigest, participants: [ParticipantDigest], wantsReply: Bool)
    /// A peer's players.
    case participant(ParticipantRecord)
    /// The sender's clock estimates of its peers, for the mesh's closure checks.
    case clockReport(ClockReport)
    /// A new group key (rotation), sent under the current key.
    case keyUpdate(epoch: UInt32, key: [UInt8])
    /// The key of this epoch is installed.
    case keyAck(epoch: UInt32)

    public static let maxNameBytes = 64
    public static let maxDigestItems = GroupState.maxItems
    public static let maxParticipantDigests = 64
    public static let maxReportEntries = 12
}

/// A record's anchor on the relaying sender's clock, for receivers with no estimate of the origin's clock.
public struct RelayAnchor: Equatable, Hashable, Sendable, Codable {
    public var anchorTime: Int64
    /// The relay's error bound on that conversion (ns).
    public var errorBoundNs: Int64

    public init(anchorTime: Int64, errorBoundNs: Int64) {
        self.anchorTime = anchorTime
        self.errorBoundNs = errorBoundNs
    }
}

/// One entry of a participant digest: whose record, and which version of it.
public struct ParticipantDigest: Equatable, Hashable, Sendable, Codable {
    public var peer: PeerID
    public var incarnation: UInt64
    public var version: UInt64

    public init(peer: PeerID, incarnation: UInt64, version: UInt64) {
        self.peer = peer
        self.incarnation = incarnation
        self.version = version
    }
}

/// A peer's own (direct) estimates of its peers' clocks, on its own clock, for the mesh's
/// closure checks (see ``MeshClock``).
public struct ClockReport: Equatable, Sendable, Codable {
    public struct Entry: Equatable, Sendable, Codable {
        public var peer: PeerID
        /// The target's incarnation when measured: a report about an earlier life is stale.
        public var incarnation: UInt64
        /// Target minus reporter; `referenceLocal` and `lastSampleLocal` are on the reporter's clock.
        public var estimate: ClockEstimate

        public init(peer: PeerID, incarnation: UInt64, estimate: ClockEstimate) {
            self.peer = peer
            self.incarnation = incarnation
            self.estimate = estimate
        }
    }

    public var entries: [Entry]

    public init(entries: [Entry]) {
        self.entries = entries
    }
}
