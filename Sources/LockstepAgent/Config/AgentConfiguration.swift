import LockstepCore

/// Everything an agent is started with. `lockstepd` fills it from flags and environment
/// variables; tests build it directly. Every field has a working default.
public struct AgentConfiguration: Sendable {
    /// The player socket.
    public var socketPath: String
    public var socketMode: UInt32 = 0o600
    public var socketGroup: UInt32?
    public var stateDirectory: String
    /// Overrides (and then replaces) the stored human name.
    public var name: String?
    /// Which stored group to use (created with a random key if missing).
    public var group: String?
    /// A join code to store and use as the active group before starting.
    public var joinCode: String?
    /// UDP port for peers; 0 picks a free one.
    public var udpPort: UInt16 = 0

    /// Publish and browse with DNS-SD (avahi).
    public var mdns: Bool = true
    /// Peers to contact without discovery.
    public var staticPeers: [String] = []
    /// A peer that has not answered for this long is lost.
    public var peerTimeout: TimeSpan = .seconds(3)
    /// Up to this many peers every peer's clock is measured; above, a grid's row and column
    /// (``ClockNeighbours``). Give every agent of a group the same value.
    public var fullMeshUpTo: Int = ClockNeighbours().denseUpTo
    /// Suspension reasons that make the group wait instead of playing on (give every agent the same set).
    public var waitingReasons: Set<String> = []
    /// A group waiting for its participants to be ready starts anyway after this long.
    public var waitTimeout: TimeSpan = .seconds(8)

    /// Test hooks: a simulated device clock on the wire, and impaired outgoing datagrams.
    public var deviceClock: DeviceClock = .identity
    public var impairments: ImpairmentPlan = .none
    /// Allows the test hooks at run time (`sim_clock`). Off unless asked for, or unless a
    /// simulated clock or an impairment is already in use.
    public var testHooks = false

    public init(socketPath: String, stateDirectory: String) {
        self.socketPath = socketPath
        self.stateDirectory = stateDirectory
    }
}
