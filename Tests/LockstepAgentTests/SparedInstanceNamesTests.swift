@testable import LockstepAgent
@testable import LockstepCore
import Testing

/// Which DNS-SD instances an agent leaves unresolved (issue 17): those named like a peer it
/// reaches through introductions and does not need DNS-SD for.
@Suite struct SparedInstanceNamesTests {
    static let now = LocalTime(ns: 50_000_000_000)

    static func peer(_ n: UInt64, _ name: String, state: Membership.State = .reachable, heard: Bool = true, sighted: Bool = false) -> Membership.Peer {
        let sightings: [Membership.Sighting: [Endpoint]] = sighted ? [.init(instance: name, interfaceIndex: 2): [.v4(a: 10, b: 77, c: 0, d: UInt8(n), port: 5000)]] : [:]
        return Membership.Peer(
            id: PeerID(high: n, low: n), name: name, state: state, since: now, lastHeard: heard ? now : nil, paths: [], sightings: sightings)
    }

    static func spared(_ peers: [Membership.Peer], measured: Set<PeerID> = [], own: String = "h1") -> Set<String> {
        Agent.sparedInstanceNames(peers: peers, measured: measured, ownName: own)
    }

    @Test func aReachablePeerKnownOnlyThroughIntroductionsAndNotMeasuredIsSparedByItsHelloName() {
        #expect(Self.spared([Self.peer(2, "h2")]) == ["h2"])
    }

    @Test func aPeerThisAgentMeasuresIsResolvedForItsClockReportsToCount() {
        let p = Self.peer(2, "h2")
        #expect(Self.spared([p], measured: [p.id]).isEmpty)
    }

    @Test func aPeerDNSSDAlreadyShowsIsSettledRatherThanSpared() {
        #expect(Self.spared([Self.peer(2, "h2", sighted: true)]).isEmpty)
    }

    @Test func aPeerNotReachableOrNeverHeardOrWithoutItsHelloNameIsResolved() {
        let unnamed = Self.peer(4, PeerID(high: 4, low: 4).short)
        #expect(Self.spared([Self.peer(2, "h2", state: .lost), Self.peer(3, "h3", heard: false), unnamed]).isEmpty)
    }

    @Test func aNameTwoDevicesCarryIsResolvedBecauseTheInstanceCouldBeEithers() {
        #expect(Self.spared([Self.peer(2, "kitchen"), Self.peer(3, "kitchen", state: .lost), Self.peer(4, "h4")]) == ["h4"])
        #expect(Self.spared([Self.peer(2, "h1")], own: "h1").isEmpty, "named like this device")
    }
}
