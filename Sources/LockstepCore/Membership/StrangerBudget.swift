/// What peers that only DNS-SD names may cost (review finding M5). The group's tag is public, so
/// anyone on the LAN, holding no key, can publish services that claim to be members, with
/// addresses pointing anywhere. Until such a peer sends an authenticated datagram it is a
/// stranger: at most ``maxUnheard`` of them are tracked, the oldest giving way to a newcomer
/// (a stranger named later, or any peer when the table is full: a real peer's first probe goes
/// out at once, and once it answers it is no stranger), and their addresses are probed at the usual interval
/// only for ``quickProbesFor`` (a real peer answers within that), then every
/// ``slowProbeInterval``, and not at all once ``giveUpAfter`` has passed (the peer's own
/// datagrams still make it reachable: it probes us too).
///
/// A stranger that gives way is not probed any more, but what DNS-SD showed of it is remembered
/// (at most ``maxRemembered`` of them, the oldest going first) until the instance is withdrawn:
/// DNS-SD names an instance once, and a real member that gave way while a large group appeared
/// at once must still count as vouched for by discovery when it speaks (its clock reports are
/// used only then: ``MeshClock``).
public struct StrangerBudget: Sendable, Equatable {
    /// Peers named by DNS-SD and never heard from, at most.
    public var maxUnheard: Int = 16
    /// Sightings of strangers that gave way, remembered at most.
    public var maxRemembered: Int = 256
    /// How long a stranger's paths are probed at the usual interval.
    public var quickProbesFor: TimeSpan = .seconds(10)
    /// After that, how often.
    public var slowProbeInterval: TimeSpan = .seconds(5)
    /// After this long unheard, its paths are no longer probed.
    public var giveUpAfter: TimeSpan = .seconds(60)
    /// A stranger only another member named (`peer_addresses`, not DNS-SD) is probed at the
    /// usual interval for this long, then forgotten: a real peer answers within a round trip,
    /// and a member's word must not make every device probe an address for long (each such
    /// entry costs a victim at most this many probes per device told).
    public var introducedProbesFor: TimeSpan = .seconds(3)

    public init() {}

    /// How often to probe a stranger's path, `age` after it appeared; nil: not any more.
    public func probeInterval(usual: TimeSpan, age: TimeSpan) -> TimeSpan? {
        if age >= giveUpAfter { return nil }
        return age < quickProbesFor ? usual : max(usual, slowProbeInterval)
    }

    /// The stranger that gives way: the one that appeared first.
    public static func evictee(among peers: [PeerID: Membership.Peer]) -> PeerID? {
        peers.values.filter { $0.lastHeard == nil }.min { ($0.since, $0.id) < ($1.since, $1.id) }?.id
    }
}
