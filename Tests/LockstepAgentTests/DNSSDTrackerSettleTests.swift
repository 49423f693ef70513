@testable import LockstepAgent
import LockstepCore
import Testing

/// ``DNSSDTracker``'s settled instances (issue 17): a reachable peer's instance keeps only its
/// share of the browse, and is resolved again when DNS-SD or the agent says something changed.
@Suite struct DNSSDTrackerSettleTests {
    static let eth0 = DNSSDTrackerTests.eth0
    static let a = DNSSDTrackerTests.a
    static let b = DNSSDTrackerTests.b
    static let hostA = DNSSDTrackerTests.hostA
    static let hostA2 = DNSSDHostKey(host: "vm-5.local.", interfaceIndex: eth0)
    static let v4 = DNSSDTrackerTests.v4
    static let v4New: [UInt8] = [10, 77, 0, 9]

    static func updated(_ key: DNSSDServiceKey, host: DNSSDHostKey, _ address: [UInt8]) -> DNSSDTracker.Directive {
        .emit(.serviceUpdated(DiscoveredService(
            instanceName: key.name, interfaceIndex: key.interfaceIndex, hostTarget: host.host, txt: ["id": key.name],
            endpoints: [.v4(a: address[0], b: address[1], c: address[2], d: address[3], port: 5000)])))
    }

    /// What a flush does for a settled instance answered for the first time, or with a change:
    /// reports it, then closes its resolve and address queries.
    static func reportedAndClosed(_ key: DNSSDServiceKey, host: DNSSDHostKey, _ address: [UInt8]) -> [DNSSDTracker.Directive] {
        [updated(key, host: host, address), .stopResolve(key), .stopAddressQueries(host)]
    }

    /// Answers the resolve of `key` with `host` and its address; returns what the flush emits.
    static func answer(_ t: inout DNSSDTracker, _ key: DNSSDServiceKey, host: DNSSDHostKey, _ address: [UInt8]) -> [DNSSDTracker.Directive] {
        _ = t.onResolved(key, hostTarget: host.host, port: 5000, txt: ["id": key.name])
        _ = t.onAddress(host, address: address, added: true)
        return t.flush()
    }

    /// A tracker that has reported `alpha` (browsed over two protocols) at 10.77.0.2.
    func reported(maxServices: Int = 8) -> DNSSDTracker {
        var t = DNSSDTracker(maxServices: maxServices)
        _ = t.onBrowse(added: true, name: "alpha", interfaceIndex: Self.eth0)
        _ = t.onBrowse(added: true, name: "alpha", interfaceIndex: Self.eth0)
        _ = Self.answer(&t, Self.a, host: Self.hostA, Self.v4)
        return t
    }

    /// `reported()` with alpha settled: dormant.
    func dormant() -> DNSSDTracker {
        var t = reported()
        _ = t.onSettled([Self.a])
        return t
    }

    @Test func aReportedInstanceWhosePeerIsReachableClosesItsResolveAndAddressQueries() {
        var t = reported()
        #expect(t.onSettled([Self.a]) == [.stopResolve(Self.a), .stopAddressQueries(Self.hostA)])
        #expect(t.activeCount == 0 && t.hosts.isEmpty && t.waiting.isEmpty)
        #expect(t.onSettled([Self.a]) == [], "telling it again changes nothing")
    }

    @Test func aSettledInstanceStaysOpenUntilItIsAnsweredThenCloses() {
        var t = DNSSDTracker(maxServices: 8)
        _ = t.onBrowse(added: true, name: "alpha", interfaceIndex: Self.eth0)
        #expect(t.onSettled([Self.a]) == [])
        #expect(t.onResolved(Self.a, hostTarget: Self.hostA.host, port: 5000, txt: ["id": "alpha"]) == [.startAddressQueries(Self.hostA)])
        #expect(t.flush() == [], "no address yet: nothing to report, nothing closed")
        _ = t.onAddress(Self.hostA, address: Self.v4, added: true)
        #expect(t.flush() == Self.reportedAndClosed(Self.a, host: Self.hostA, Self.v4))
    }

    @Test func aDormantInstanceWhosePeerIsLostIsResolvedAgainAndReportsOnlyAChange() {
        var t = dormant()
        #expect(t.onSettled([]) == [.startResolve(Self.a)])
        #expect(Self.answer(&t, Self.a, host: Self.hostA, Self.v4) == [], "same value: nothing new to report")
        #expect(t.activeCount == 1, "not settled: it stays open")
        #expect(t.onAddress(Self.hostA, address: Self.v4New, added: true) == [])
        #expect(t.flush().count == 1, "a later address change is reported")
    }

    @Test func aBrowseAddOfADormantInstanceResolvesItAgainAndItClosesOnceAnswered() {
        var t = dormant()
        #expect(t.onBrowse(added: true, name: "alpha", interfaceIndex: Self.eth0) == [.startResolve(Self.a)])
        #expect(
            Self.answer(&t, Self.a, host: Self.hostA2, Self.v4New) == Self.reportedAndClosed(Self.a, host: Self.hostA2, Self.v4New),
            "the renumbered host is reported, then closed again: its peer is still reachable")
    }

    @Test func aRemoveOverOneProtocolResolvesADormantInstanceAgain() {
        var t = dormant()
        #expect(t.onBrowse(added: false, name: "alpha", interfaceIndex: Self.eth0) == [.startResolve(Self.a)])
    }

    @Test func aWithdrawnDormantInstanceIsReportedRemovedAndResolvedFromScratchWhenItReturns() {
        var t = dormant()
        _ = t.onBrowse(added: false, name: "alpha", interfaceIndex: Self.eth0)  // wakes it
        #expect(
            t.onBrowse(added: false, name: "alpha", interfaceIndex: Self.eth0) == [
                .stopResolve(Self.a), .emit(.serviceRemoved(instanceName: "alpha", interfaceIndex: Self.eth0)),
            ])
        #expect(t.onBrowse(added: true, name: "alpha", interfaceIndex: Self.eth0) == [.startResolve(Self.a)])
        #expect(
            Self.answer(&t, Self.a, host: Self.hostA, Self.v4) == Self.reportedAndClosed(Self.a, host: Self.hostA, Self.v4),
            "back: reported afresh, then closed (its peer is still reachable)")
    }

    @Test func aDormantInstanceRemovedInOneGoIsReportedRemovedWithNothingToStop() {
        var t = DNSSDTracker(maxServices: 8)
        _ = t.onBrowse(added: true, name: "alpha", interfaceIndex: Self.eth0)
        _ = Self.answer(&t, Self.a, host: Self.hostA, Self.v4)
        _ = t.onSettled([Self.a])
        #expect(t.onBrowse(added: false, name: "alpha", interfaceIndex: Self.eth0) == [.emit(.serviceRemoved(instanceName: "alpha", interfaceIndex: Self.eth0))])
        #expect(t.services.isEmpty)
    }

    @Test func goingDormantGivesTheSlotToTheNextWaiting() {
        var t = reported(maxServices: 1)
        _ = t.onBrowse(added: true, name: "beta", interfaceIndex: Self.eth0)
        #expect(t.waiting == [Self.b])
        #expect(t.onSettled([Self.a]) == [.stopResolve(Self.a), .stopAddressQueries(Self.hostA), .startResolve(Self.b)])
        #expect(t.waiting.isEmpty)
    }

    @Test func aWakingInstanceWaitsForASlotWhenNoneIsFree() {
        var t = reported(maxServices: 1)
        _ = t.onSettled([Self.a])
        _ = t.onBrowse(added: true, name: "beta", interfaceIndex: Self.eth0)
        #expect(t.onSettled([]) == [])
        #expect(t.waiting == [Self.a])
    }

    @Test func aReportedInstanceWaitingForItsTurnGoesDormantWithoutASlot() {
        var t = reported(maxServices: 1)
        _ = t.onBrowse(added: true, name: "beta", interfaceIndex: Self.eth0)
        #expect(t.rotate() == [.stopResolve(Self.a), .stopAddressQueries(Self.hostA), .startResolve(Self.b)])
        #expect(t.waiting == [Self.a])
        #expect(t.onSettled([Self.a]) == [])
        #expect(t.waiting.isEmpty && t.services[Self.a]?.dormant == true)
        #expect(t.onSettled([]) == [], "woken with no free slot: it waits")
        #expect(t.waiting == [Self.a])
    }

    @Test func aRefreshResolvesDormantInstancesAgainAndLeavesOpenOnesAlone() {
        var t = dormant()
        _ = t.onBrowse(added: true, name: "beta", interfaceIndex: Self.eth0)
        #expect(t.onRefresh([Self.a, Self.b]) == [.startResolve(Self.a)])
        #expect(Self.answer(&t, Self.a, host: Self.hostA, Self.v4) == [.stopResolve(Self.a), .stopAddressQueries(Self.hostA)])
    }

    @Test func theSettledSetSurvivesAReset() {
        var t = dormant()
        t.reset()
        #expect(t.onBrowse(added: true, name: "alpha", interfaceIndex: Self.eth0) == [.startResolve(Self.a)])
        #expect(Self.answer(&t, Self.a, host: Self.hostA, Self.v4) == Self.reportedAndClosed(Self.a, host: Self.hostA, Self.v4))
    }

    @Test func instancesSharingAHostKeepItsQueriesUntilTheLastGoesDormant() {
        var t = reported()
        _ = t.onBrowse(added: true, name: "beta", interfaceIndex: Self.eth0)
        _ = Self.answer(&t, Self.b, host: Self.hostA, Self.v4)
        #expect(t.onSettled([Self.a]) == [.stopResolve(Self.a)])
        #expect(t.onSettled([Self.a, Self.b]) == [.stopResolve(Self.b), .stopAddressQueries(Self.hostA)])
    }

    /// 64 peers browsed at once, 24 slots: the refs open never exceed `2 + 3 × 24`, and once every
    /// peer is answered and settled none is left but the browse and the registration.
    @Test func sixtyFourPeersNeverHoldMoreThanTheBoundAndEndWithNone() {
        var t = DNSSDTracker(maxServices: 24)
        var resolves: Set<DNSSDServiceKey> = []
        var queried: Set<DNSSDHostKey> = []
        var most = 0
        func apply(_ directives: [DNSSDTracker.Directive]) {
            for d in directives {
                switch d {
                case .startResolve(let k): #expect(resolves.insert(k).inserted)
                case .stopResolve(let k): #expect(resolves.remove(k) != nil)
                case .startAddressQueries(let h): #expect(queried.insert(h).inserted)
                case .stopAddressQueries(let h): #expect(queried.remove(h) != nil)
                case .emit: break
                }
            }
            most = max(most, 2 + resolves.count + 2 * queried.count)
        }
        let keys = (0..<64).map { DNSSDServiceKey(name: "peer\($0)", interfaceIndex: Self.eth0) }
        for key in keys { apply(t.onBrowse(added: true, name: key.name, interfaceIndex: key.interfaceIndex)) }
        var reachable: Set<DNSSDServiceKey> = []
        for _ in 0..<10 where !resolves.isEmpty {
            for (i, key) in keys.enumerated() where resolves.contains(key) {
                let host = DNSSDHostKey(host: "vm-\(i).local.", interfaceIndex: Self.eth0)
                apply(t.onResolved(key, hostTarget: host.host, port: 5000, txt: ["id": key.name]))
                apply(t.onAddress(host, address: [10, 77, 1, UInt8(i)], added: true))
                reachable.insert(key)
            }
            apply(t.flush())
            apply(t.onSettled(reachable))
        }
        #expect(most <= 2 + 3 * 24)
        #expect(resolves.isEmpty && queried.isEmpty && t.waiting.isEmpty)
        #expect(t.services.values.allSatisfy { $0.dormant })
    }
}
