/// `hello`: the first request of a client. Names the client, its role, and (for players) what it
/// can do and how late its output is.
public struct HelloRequest: Codable, Sendable, Equatable, PlayerRequest {
    public enum Role: String, Codable, Sendable { case player, monitor }

    /// The protocol version the client speaks.
    public var `protocol`: Int
    public var role: Role?
    public var name: String?
    public var capabilities: PlayerCapabilities?
    /// Delay from the player's clock to light and sound (HDMI, Bluetooth, a DAC), in ns. The agent
    /// moves every anchor it gives this player earlier by this much.
    public var outputLatencyNs: Int64?
    /// How long the player needs between being told to start and starting, in ns. The agent
    /// gives anchors at least this far in the future.
    public var startLatencyNs: Int64?
    /// How precise the player's position reports are (ns): the sync policy does not correct
    /// errors it cannot tell from report noise. Default: the agent's thresholds (0.2 ms).
    public var syncToleranceNs: Int64?

    public init(protocol: Int = PlayerProtocol.version, role: Role? = nil, name: String? = nil, capabilities: PlayerCapabilities? = nil, outputLatencyNs: Int64? = nil, startLatencyNs: Int64? = nil, syncToleranceNs: Int64? = nil) {
        self.protocol = `protocol`
        self.role = role
        self.name = name
        self.capabilities = capabilities
        self.outputLatencyNs = outputLatencyNs
        self.startLatencyNs = startLatencyNs
        self.syncToleranceNs = syncToleranceNs
    }

    enum CodingKeys: String, CodingKey {
        case `protocol`, role, name, capabilities
        case outputLatencyNs = "output_latency_ns"
        case startLatencyNs = "start_latency_ns"
        case syncToleranceNs = "sync_tolerance_ns"
    }

    public func validate() throws(ProtocolError) {
        try check("output_latency_ns", outputLatencyNs, within: PlayerLimits.latencyNs)
        try check("start_latency_ns", startLatencyNs, within: PlayerLimits.latencyNs)
        try check("sync_tolerance_ns", syncToleranceNs, within: PlayerLimits.latencyNs)
    }
}

/// `start_latency`: a player's start latency changes while it is connected (it has measured
/// itself, or what it must do for its next start changed). The agent anchors group commands
/// with the new value from now on, and the other peers once they have this player's record.
public struct StartLatencyRequest: Codable, Sendable, Equatable, PlayerRequest {
    /// As `hello`'s `start_latency_ns`.
    public var startLatencyNs: Int64

    public init(startLatencyNs: Int64) {
        self.startLatencyNs = startLatencyNs
    }

    enum CodingKeys: String, CodingKey {
        case startLatencyNs = "start_latency_ns"
    }

    public func validate() throws(ProtocolError) {
        try check("start_latency_ns", startLatencyNs, within: PlayerLimits.latencyNs)
    }
}

/// What a player can do. The sync policy uses only what the player has.
public struct PlayerCapabilities: Codable, Sendable, Equatable {
    /// Can change its playback rate smoothly (small corrections by rate nudges).
    public var rate: Bool
    /// Can seek to an exact position (not only to key frames).
    public var exactSeek: Bool
    /// Can start at a given host time by itself (otherwise the agent's instants are best effort).
    public var startAtHostTime: Bool

    public init(rate: Bool = false, exactSeek: Bool = false, startAtHostTime: Bool = false) {
        self.rate = rate
        self.exactSeek = exactSeek
        self.startAtHostTime = startAtHostTime
    }

    enum CodingKeys: String, CodingKey {
        case rate
        case exactSeek = "exact_seek"
        case startAtHostTime = "start_at_host_time"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        rate = try c.decodeIfPresent(Bool.self, forKey: .rate) ?? false
        exactSeek = try c.decodeIfPresent(Bool.self, forKey: .exactSeek) ?? false
        startAtHostTime = try c.decodeIfPresent(Bool.self, forKey: .startAtHostTime) ?? false
    }
}

/// The reply to `hello`.
public struct HelloResult: Codable, Sendable, Equatable {
    public var `protocol`: Int
    /// This client's id on this agent (players only).
    public var playerID: UInt32?
    public var agent: AgentStatus
    /// The clock every `host_time_ns` on this socket is on.
    public var hostClock: String

    public init(protocol: Int, playerID: UInt32?, agent: AgentStatus, hostClock: String = "CLOCK_MONOTONIC") {
        self.protocol = `protocol`
        self.playerID = playerID
        self.agent = agent
        self.hostClock = hostClock
    }

    enum CodingKeys: String, CodingKey {
        case `protocol`
        case playerID = "player_id"
        case agent
        case hostClock = "host_clock"
    }
}

/// `status`: who this agent is.
public struct AgentStatus: Codable, Sendable, Equatable {
    public var peerID: String
    public var name: String
    public var version: String
    public var playerProtocol: Int
    public var peerProtocol: Int
    public var socket: String
    public var stateDir: String
    public var pid: Int32
    public var udpPort: UInt16
    public var incarnation: UInt64
    public var uptimeNs: Int64
    public var hostTimeNs: Int64
    public var group: GroupInfo
    public var peersReachable: Int
    public var peersKnown: Int
    public var players: Int
    /// DNS-SD: `off`, `starting`, `running`, or `unavailable: REASON`.
    public var mdns: String
    /// Datagrams sent, received, and dropped by reason (`dropped_auth_failed`, …).
    public var counters: [String: UInt64]

    public init(peerID: String, name: String, version: String, playerProtocol: Int, peerProtocol: Int, socket: String, stateDir: String, pid: Int32, udpPort: UInt16, incarnation: UInt64, uptimeNs: Int64, hostTimeNs: Int64, group: GroupInfo, peersReachable: Int, peersKnown: Int, players: Int, mdns: String, counters: [String: UInt64] = [:]) {
        self.peerID = peerID
        self.name = name
        self.version = version
        self.playerProtocol = playerProtocol
        self.peerProtocol = peerProtocol
        self.socket = socket
        self.stateDir = stateDir
        self.pid = pid
        self.udpPort = udpPort
        self.incarnation = incarnation
        self.uptimeNs = uptimeNs
        self.hostTimeNs = hostTimeNs
        self.group = group
        self.peersReachable = peersReachable
        self.peersKnown = peersKnown
        self.players = players
        self.mdns = mdns
        self.counters = counters
    }

    enum CodingKeys: String, CodingKey {
        case peerID = "peer_id"
        case name, version
        case playerProtocol = "player_protocol"
        case peerProtocol = "peer_protocol"
        case socket
        case stateDir = "state_dir"
        case pid
        case udpPort = "udp_port"
        case incarnation
        case uptimeNs = "uptime_ns"
        case hostTimeNs = "host_time_ns"
        case group
        case peersReachable = "peers_reachable"
        case peersKnown = "peers_known"
        case players, mdns, counters
    }
}

/// The group this agent belongs to, without its key.
public struct GroupInfo: Codable, Sendable, Equatable {
    /// The local name of the group (a label; the key is what defines the group).
    public var name: String
    /// The public tag published over DNS-SD (derived from the key; reveals nothing about it).
    public var tag: String
    /// The key's epoch (raised by each rotation).
    public var epoch: UInt32

    public init(name: String, tag: String, epoch: UInt32) {
        self.name = name
        self.tag = tag
        self.epoch = epoch
    }
}

/// `group_show` (and the result of `group_create`, `group_join`, `group_rotate`).
public struct GroupShowResult: Codable, Sendable, Equatable {
    public var name: String
    /// The group's id (fixed at creation; not secret, not the key).
    public var id: String
    public var tag: String
    public var epoch: UInt32
    public var previousEpoch: UInt32?
    /// Only when asked for (`reveal`), or when the group was just created: it gives the key away.
    public var joinCode: String?

    public init(name: String, id: String, tag: String, epoch: UInt32, previousEpoch: UInt32?, joinCode: String?) {
        self.name = name
        self.id = id
        self.tag = tag
        self.epoch = epoch
        self.previousEpoch = previousEpoch
        self.joinCode = joinCode
    }

    enum CodingKeys: String, CodingKey {
        case name, id, tag, epoch
        case previousEpoch = "previous_epoch"
        case joinCode = "join_code"
    }
}

/// Parameters of `group_show`, `group_create`, `group_join`.
public struct GroupRequest: Codable, Sendable, Equatable, PlayerRequest {
    public var reveal: Bool?
    public var name: String?
    public var code: String?

    public init(reveal: Bool? = nil, name: String? = nil, code: String? = nil) {
        self.reveal = reveal
        self.name = name
        self.code = code
    }

    public func validate() throws(ProtocolError) {}
}

/// `sim_clock` (test hook, needs `lockstepd --test-hooks`): make this agent's simulated device
/// clock jump by `jump_ms` now and/or run at `skew_ppm` from now.
public struct SimClockRequest: Codable, Sendable, Equatable, PlayerRequest {
    public var jumpMs: Double?
    public var skewPPM: Double?

    public init(jumpMs: Double? = nil, skewPPM: Double? = nil) {
        self.jumpMs = jumpMs
        self.skewPPM = skewPPM
    }

    enum CodingKeys: String, CodingKey {
        case jumpMs = "jump_ms"
        case skewPPM = "skew_ppm"
    }

    public func validate() throws(ProtocolError) {
        try check("jump_ms", jumpMs, within: PlayerLimits.simJumpMs)
        try check("skew_ppm", skewPPM, within: PlayerLimits.simSkewPPM)
    }
}

/// `suspend_player` (CLI, for testing): suspend a player of this agent on its behalf.
public struct SuspendPlayerRequest: Codable, Sendable, Equatable, PlayerRequest {
    /// Default: the only player.
    public var playerID: UInt32?
    /// Default `interruption`.
    public var reason: String?

    public init(playerID: UInt32? = nil, reason: String? = nil) {
        self.playerID = playerID
        self.reason = reason
    }

    enum CodingKeys: String, CodingKey {
        case playerID = "player_id"
        case reason
    }

    public func validate() throws(ProtocolError) {
        if let reason, !PlayerLimits.reasonBytes.contains(reason.utf8.count) {
            throw ProtocolError(.invalidField, "reason must be 1...32 bytes")
        }
    }
}

/// `resume_player` (CLI, for testing): end a player's suspension on its behalf.
public struct ResumePlayerRequest: Codable, Sendable, Equatable, PlayerRequest {
    /// Default: the only player.
    public var playerID: UInt32?
    /// Default: its latest suspension.
    public var suspensionID: UInt32?
    public var proposePositionNs: Int64?

    public init(playerID: UInt32? = nil, suspensionID: UInt32? = nil, proposePositionNs: Int64? = nil) {
        self.playerID = playerID
        self.suspensionID = suspensionID
        self.proposePositionNs = proposePositionNs
    }

    enum CodingKeys: String, CodingKey {
        case playerID = "player_id"
        case suspensionID = "suspension_id"
        case proposePositionNs = "propose_position_ns"
    }

    public func validate() throws(ProtocolError) {
        try check("propose_position_ns", proposePositionNs, within: PlayerLimits.positionNs)
    }
}
