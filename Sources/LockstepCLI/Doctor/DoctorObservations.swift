import LockstepPlayerProtocol

/// Everything `lockstep doctor` looked at, gathered before any judgement: the agent's answers
/// to its ordinary monitor requests, avahi's view of the network and this machine's interfaces.
/// ``Diagnosis`` judges it; tests build it by hand.
public struct DoctorObservations: Sendable {
    /// How the agent answered on its socket.
    public enum AgentContact: Sendable, Equatable {
        case answered(AgentStatus)
        /// Nothing listens; `socketExists` tells a stopped agent (no file) from a dead one (a
        /// socket file left behind).
        case notRunning(socketExists: Bool)
        case permissionDenied
        case failed(String)
    }

    public var socketPath: String
    public var agent: AgentContact
    /// `status` again at the end, to see which counters grew while the doctor looked.
    public var statusLater: AgentStatus?
    /// Seconds between the two `status` answers.
    public var seconds: Double
    public var peers: PeersResult?
    public var clock: ClockResult?
    public var players: PlayersResult?
    public var browse: MDNSBrowser.Outcome
    public var interfaces: [NetworkInterface]

    public init(
        socketPath: String, agent: AgentContact, statusLater: AgentStatus? = nil, seconds: Double = 0, peers: PeersResult? = nil,
        clock: ClockResult? = nil, players: PlayersResult? = nil, browse: MDNSBrowser.Outcome, interfaces: [NetworkInterface]
    ) {
        self.socketPath = socketPath
        self.agent = agent
        self.statusLater = statusLater
        self.seconds = seconds
        self.peers = peers
        self.clock = clock
        self.players = players
        self.browse = browse
        self.interfaces = interfaces
    }

    /// The agent's first `status`, if it answered.
    public var status: AgentStatus? {
        if case .answered(let s) = agent { return s }
        return nil
    }

    /// True when the socket is the system service's (`/run/lockstep/`), so fixes name
    /// `systemctl` rather than `systemctl --user`.
    public var systemAgent: Bool { socketPath.hasPrefix("/run/lockstep/") }
}
