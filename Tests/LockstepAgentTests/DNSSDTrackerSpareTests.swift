@testable import LockstepAgent
import LockstepCore
import Testing

/// ``DNSSDTracker``'s spared instances (issue 17): instances named like peers the agent already
/// reaches through introductions are not resolved, so a large group started together does not
/// multicast every device's resolve to every avahi-daemon.
@Suite struct DNSSDTrackerSpareTests {
    static let eth0 = DNSSDTrackerTests.eth0
    static let a = DNSSDTrackerTests.a
    static let b = DNSSDTrackerTests.b
    static let hostA = DNSSDTrackerTests.hostA
    static let v4 = DNSSDTrackerTests.v4

    @Test func aBrowsedInstanceNamedLikeASparedPeerIsNotResolvedUntilTheNameLeavesTheSet() {
        var t = DNSSDTracker(maxServices: 8)
        #expect(t.onSpared(["alpha"]) == [])
        #expect(t.onBrowse(added: true, name: "alpha", interfaceIndex: Self.eth0) == [], "not resolved")
        #expect(t.activeCount == 0 && t.waiting.isEmpty, "it holds no slot and waits for none")
        #expect(t.onBrowse(added: true, name: "alpha", interfaceIndex: Self.eth0) == [], "its add over the other IP protocol does not resolve it either")
        #expect(t.onBrowse(added: true, name: "beta", interfaceIndex: Self.eth0) == [.startResolve(Self.b)], "other names are resolved as before")
        #expect(t.onSpared(["alpha"]) == [], "the same set again changes nothing")
        #expect(t.onSpared([]) == [.startResolve(Self.a)], "its name left the set: resolved now")
        #expect(t.services[Self.a]?.spared == false)
    }

    @Test func anInstanceResolvingWhenItsNameIsSparedClosesItsQueriesAndGivesItsSlotToTheNextWaiting() {
        var t = DNSSDTracker(maxServices: 1)
        _ = t.onBrowse(added: true, name: "alpha", interfaceIndex: Self.eth0)
        #expect(t.onBrowse(added: true, name: "beta", interfaceIndex: Self.eth0) == [], "one slot: beta waits")
        #expect(t.onResolved(Self.a, hostTarget: Self.hostA.host, port: 5000, txt: ["id": "alpha"]) == [.startAddressQueries(Self.hostA)])
        #expect(t.onSpared(["alpha"]) == [.stopResolve(Self.a), .stopAddressQueries(Self.hostA), .startResolve(Self.b)])
        #expect(t.hosts.isEmpty && t.waiting.isEmpty)
        _ = t.onAddress(Self.hostA, address: Self.v4, added: true)
        #expect(t.flush() == [], "a spared instance is never reported")
    }

    @Test func aWaitingInstanceWhoseNameIsSparedLeavesTheQueueAndComesBackAtItsEnd() {
        var t = DNSSDTracker(maxServices: 1)
        _ = t.onBrowse(added: true, name: "gamma", interfaceIndex: Self.eth0)
        _ = t.onBrowse(added: true, name: "alpha", interfaceIndex: Self.eth0)
        _ = t.onBrowse(added: true, name: "beta", interfaceIndex: Self.eth0)
        #expect(t.waiting == [Self.a, Self.b])
        #expect(t.onSpared(["alpha"]) == [])
        #expect(t.waiting == [Self.b])
        #expect(t.onSpared([]) == [])
        #expect(t.waiting == [Self.b, Self.a], "slots full: it waits its turn again")
    }

    @Test func anInstanceAlreadyReportedIsNotSpared() {
        var t = DNSSDTracker(maxServices: 8)
        _ = t.onBrowse(added: true, name: "alpha", interfaceIndex: Self.eth0)
        _ = DNSSDTrackerSettleTests.answer(&t, Self.a, host: Self.hostA, Self.v4)
        #expect(t.onSpared(["alpha"]) == [], "its peer is known by its TXT record: the agent settles it instead")
        #expect(t.services[Self.a]?.spared == false && t.activeCount == 1)
    }

    @Test func aSparedInstanceThatLeavesTheBrowseIsForgottenWithoutAnEvent() {
        var t = DNSSDTracker(maxServices: 8)
        _ = t.onSpared(["alpha"])
        _ = t.onBrowse(added: true, name: "alpha", interfaceIndex: Self.eth0)
        #expect(t.onBrowse(added: false, name: "alpha", interfaceIndex: Self.eth0) == [])
        #expect(t.services[Self.a] == nil)
        #expect(t.onSpared([]) == [], "nothing left to resolve")
    }

    @Test func theSparedNamesOutlastADaemonRestart() {
        var t = DNSSDTracker(maxServices: 8)
        _ = t.onSpared(["alpha"])
        t.reset()
        #expect(t.onBrowse(added: true, name: "alpha", interfaceIndex: Self.eth0) == [], "browsed again after the restart: still spared")
    }
}
