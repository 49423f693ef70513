/// `peers`: every peer the agent knows.
public struct PeersResult: Codable, Sendable, Equatable {
    public var peers: [PeerInfo]

    public init(peers: [PeerInfo]) {
        self.peers = peers
    }
}

/// One peer as the agent sees it.
public struct PeerInfo: Codable, Sendable, Equatable {
    public var peerID: String
    public var name: String
    /// `discovered`, `resolved`, `reachable` or `lost`.
    public var state: String
    /// Every known path, `10.1.0.2:4000` or `[fe80::1%2]:4000`.
    public var addresses: [String]
    /// The path in use.
    public var preferred: String?
    /// How long the peer has been in its state.
    public var stateAgeNs: Int64
    /// How long since the peer was last heard from; null if never.
    public var lastHeardAgoNs: Int64?
    /// The peer's incarnation (changes when it restarts).
    public var incarnation: UInt64?
    /// How its paths were learnt: `mdns`, `static`, `learned`.
    public var sources: [String]

    public init(peerID: String, name: String, state: String, addresses: [String], preferred: String?, stateAgeNs: Int64, lastHeardAgoNs: Int64?, incarnation: UInt64?, sources: [String]) {
        self.peerID = peerID
        self.name = name
        self.state = state
        self.addresses = addresses
        self.preferred = preferred
        self.stateAgeNs = stateAgeNs
        self.lastHeardAgoNs = lastHeardAgoNs
        self.incarnation = incarnation
        self.sources = sources
    }

    enum CodingKeys: String, CodingKey {
        case peerID = "peer_id"
        case name, state, addresses, preferred
        case stateAgeNs = "state_age_ns"
        case lastHeardAgoNs = "last_heard_ago_ns"
        case incarnation, sources
    }
}
