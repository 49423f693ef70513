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

/// `clock`: how every reachable peer's clock relates to this agent's.
public struct ClockResult: Codable, Sendable, Equatable {
    /// The agent's clock when the figures were taken (its device clock; equal to `host_time_ns`
    /// unless a test simulates a device clock).
    public var localTimeNs: Int64
    /// `CLOCK_MONOTONIC` at the same moment.
    public var hostTimeNs: Int64
    public var peers: [ClockInfo]

    public init(localTimeNs: Int64, hostTimeNs: Int64, peers: [ClockInfo]) {
        self.localTimeNs = localTimeNs
        self.hostTimeNs = hostTimeNs
        self.peers = peers
    }

    enum CodingKeys: String, CodingKey {
        case localTimeNs = "local_time_ns"
        case hostTimeNs = "host_time_ns"
        case peers
    }
}

/// One peer's clock as this agent estimates it.
public struct ClockInfo: Codable, Sendable, Equatable {
    public var peerID: String
    public var name: String
    /// Peer clock minus local clock at `local_time_ns` (ns), as used for conversions.
    public var offsetNs: Double
    /// Statistical error bound of that offset (assumes symmetric paths), ns.
    public var errorBoundNs: Double
    /// Bound that holds for any path asymmetry (about half the best round trip), ns.
    public var hardBoundNs: Double
    /// Best round-trip delay in the estimator's window, ns.
    public var delayNs: Int64
    public var skewPPM: Double
    public var samples: Int
    public var lastSampleAgeNs: Int64
    /// `direct`, or `via NAME` when the direct link is distrusted and a two-hop path is used.
    public var source: String
    /// False when the mesh contradicts the estimate in use.
    public var trusted: Bool
    /// Median disagreement between the direct estimate and the two-hop paths through other peers, ns.
    public var closureErrorNs: Double?
    /// Largest such disagreement, and the tolerance it was judged against, ns.
    public var worstClosureErrorNs: Double?
    public var worstClosureToleranceNs: Double?
    /// Two-hop paths available for the check.
    public var paths: Int
    /// Exchanges lost, samples rejected.
    public var lost: UInt64
    public var rejected: UInt64
    /// `kernel` when the last sample's send times (t1, and t3 from the peer's follow-up) were
    /// the kernel's transmit timestamps; `agent` when either was stamped by an agent before sending.
    public var sendStamps: String
    /// Samples so far with both send times from the kernel.
    public var kernelStamped: UInt64
    /// Replies used with the peer's own send stamp because their follow-up did not come in time.
    public var followUpsMissed: UInt64
    /// Kernel transmit times refused as not believable (before the agent's stamp, or far after it).
    public var stampsImplausible: UInt64
    /// The alarm of a sudden rise of the best round trip, ns (absent when there is none): one
    /// direction slowed by `d` moves the offset by `d/2` unseen, so the bound is widened until
    /// the path is back or the rise is shown to be shared by both directions.
    public var delayStepNs: Int64?
    /// Clock requests this agent sent the peer; absent from older agents.
    public var requests: UInt64?
    /// Samples measured by the peer's exchanges with this agent (its `clock_result`s), not by
    /// this agent's own requests; absent from agents before them.
    public var mirrored: UInt64?
    /// `clock_result`s from the peer that matched no reply of this agent (late, replayed, forged).
    public var unmatchedResults: UInt64?

    public init(peerID: String, name: String, offsetNs: Double, errorBoundNs: Double, hardBoundNs: Double, delayNs: Int64, skewPPM: Double, samples: Int, lastSampleAgeNs: Int64, source: String, trusted: Bool, closureErrorNs: Double?, worstClosureErrorNs: Double?, worstClosureToleranceNs: Double?, paths: Int, lost: UInt64, rejected: UInt64, sendStamps: String, kernelStamped: UInt64, followUpsMissed: UInt64, stampsImplausible: UInt64, delayStepNs: Int64? = nil, requests: UInt64? = nil, mirrored: UInt64? = nil, unmatchedResults: UInt64? = nil) {
        self.peerID = peerID
        self.name = name
        self.offsetNs = offsetNs
        self.errorBoundNs = errorBoundNs
        self.hardBoundNs = hardBoundNs
        self.delayNs = delayNs
        self.skewPPM = skewPPM
        self.samples = samples
        self.lastSampleAgeNs = lastSampleAgeNs
        self.source = source
        self.trusted = trusted
        self.closureErrorNs = closureErrorNs
        self.worstClosureErrorNs = worstClosureErrorNs
        self.worstClosureToleranceNs = worstClosureToleranceNs
        self.paths = paths
        self.lost = lost
        self.rejected = rejected
        self.sendStamps = sendStamps
        self.kernelStamped = kernelStamped
        self.followUpsMissed = followUpsMissed
        self.stampsImplausible = stampsImplausible
        self.delayStepNs = delayStepNs
        self.requests = requests
        self.mirrored = mirrored
        self.unmatchedResults = unmatchedResults
    }

    enum CodingKeys: String, CodingKey {
        case peerID = "peer_id"
        case name
        case offsetNs = "offset_ns"
        case errorBoundNs = "error_bound_ns"
        case hardBoundNs = "hard_bound_ns"
        case delayNs = "delay_ns"
        case skewPPM = "skew_ppm"
        case samples
        case lastSampleAgeNs = "last_sample_age_ns"
        case source, trusted
        case closureErrorNs = "closure_error_ns"
        case worstClosureErrorNs = "worst_closure_error_ns"
        case worstClosureToleranceNs = "worst_closure_tolerance_ns"
        case paths, lost, rejected
        case sendStamps = "send_stamps"
        case kernelStamped = "kernel_stamped"
        case followUpsMissed = "follow_ups_missed"
        case stampsImplausible = "stamps_implausible"
        case delayStepNs = "delay_step_ns"
        case requests, mirrored
        case unmatchedResults = "unmatched_results"
    }
}
