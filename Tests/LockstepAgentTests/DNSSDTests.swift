#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LockstepCore
import Logging
import Testing

import CLockstepPosix

@testable import LockstepAgent

// MARK: - TXT records

@Suite struct TXTRecordTests {
    @Test func encodesEntriesSortedByLowercasedKey() throws {
        let bytes = try TXTRecord.encode(["b": "2", "A": "1"])
        #expect(bytes == [3] + Array("a=1".utf8) + [3] + Array("b=2".utf8))
    }

    @Test func encodesAnEmptyDictionaryAsOneEmptyString() throws {
        #expect(try TXTRecord.encode([:]) == [0])
    }

    @Test func encodesAnEmptyValueWithItsEqualsSign() throws {
        #expect(try TXTRecord.encode(["flag": ""]) == [5] + Array("flag=".utf8))
    }

    @Test func refusesAnEmptyKey() {
        #expect(throws: TXTRecordError.emptyKey) { try TXTRecord.encode(["": "x"]) }
    }

    @Test func refusesKeysWithEqualsOrOutsidePrintableASCII() {
        #expect(throws: TXTRecordError.invalidKey("a=b")) { try TXTRecord.encode(["a=b": "x"]) }
        #expect(throws: TXTRecordError.invalidKey("clé")) { try TXTRecord.encode(["clé": "x"]) }
        #expect(throws: TXTRecordError.invalidKey("a\tb")) { try TXTRecord.encode(["a\tb": "x"]) }
    }

    @Test func refusesKeysThatDifferOnlyInCase() {
        #expect(throws: TXTRecordError.duplicateKey("id")) { try TXTRecord.encode(["id": "1", "ID": "2"]) }
    }

    @Test func acceptsAnEntryOf255BytesAndRefuses256() throws {
        let fits = String(repeating: "v", count: 255 - 2)  // "k=" + value
        #expect(try TXTRecord.encode(["k": fits]).count == 256)
        #expect(throws: TXTRecordError.entryTooLong(key: "k", bytes: 256)) {
            try TXTRecord.encode(["k": fits + "v"])
        }
    }

    @Test func countsValueBytesNotCharacters() {
        let value = String(repeating: "é", count: 127)  // 254 bytes
        #expect(throws: TXTRecordError.entryTooLong(key: "k", bytes: 256)) { try TXTRecord.encode(["k": value]) }
    }

    @Test func refusesRecordsOver1300Bytes() {
        var txt: [String: String] = [:]
        for i in 0..<6 { txt["k\(i)"] = String(repeating: "x", count: 250) }  // 6 × 254 bytes
        #expect(throws: TXTRecordError.recordTooLong(bytes: 6 * 254)) { try TXTRecord.encode(txt) }
    }

    @Test func decodesWhatItEncodes() throws {
        let txt = ["id": "0123456789abcdef0123456789abcdef", "group": "living room", "v": "1", "empty": "", "eq": "a=b"]
        #expect(TXTRecord.decode(try TXTRecord.encode(txt)) == txt)
    }

    @Test func decodesAvahisEmptyRecordAsEmpty() {
        #expect(TXTRecord.decode([0]) == [:])
        #expect(TXTRecord.decode([]) == [:])
    }

    @Test func decodeLowercasesKeysAndKeepsTheFirstOfDuplicates() {
        let bytes: [UInt8] = [4] + Array("ID=1".utf8) + [4] + Array("id=2".utf8)
        #expect(TXTRecord.decode(bytes) == ["id": "1"])
    }

    @Test func decodeReadsABareKeyAsAnEmptyValue() {
        #expect(TXTRecord.decode([4] + Array("flag".utf8)) == ["flag": ""])
    }

    @Test func decodeSkipsEmptyKeysAndValuesThatAreNotUTF8() {
        let bytes: [UInt8] = [2] + Array("=x".utf8) + [3, UInt8(ascii: "b"), UInt8(ascii: "="), 0xff] + [3] + Array("c=3".utf8)
        #expect(TXTRecord.decode(bytes) == ["c": "3"])
    }

    @Test func decodeKeepsWhatPrecedesATruncatedEntry() {
        let bytes: [UInt8] = [3] + Array("a=1".utf8) + [9] + Array("b=2".utf8)
        #expect(TXTRecord.decode(bytes) == ["a": "1"])
    }
}

// MARK: - avahi's allocations

@Suite struct AvahiAllocationTests {
    typealias Malloc = @convention(c) (Int) -> UnsafeMutableRawPointer?
    typealias Free = @convention(c) (UnsafeMutableRawPointer?) -> Void

    /// A block just freed is what malloc hands out next from glibc's thread cache, unzeroed (the
    /// case M_PERTURB missed): avahi must get it zeroed all the same, or avahi 0.8's compat
    /// library calls whatever a freed block left in a DNSServiceRef's callback pointers.
    @Test func avahiGetsZeroedMemoryEvenWhereMallocWouldReuseADirtyBlock() throws {
        #expect(lockstep_zero_avahi_allocations() == 1)
        let mallocSymbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "avahi_malloc")
        let freeSymbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "avahi_free")
        let avahiMalloc = unsafeBitCast(try #require(mallocSymbol), to: Malloc.self)
        let avahiFree = unsafeBitCast(try #require(freeSymbol), to: Free.self)
        for size in [24, 200, 1_000] {
            for _ in 0..<8 {
                let fresh = malloc(size)
                let dirty = try #require(fresh)
                dirty.initializeMemory(as: UInt8.self, repeating: 0xA5, count: size)
                free(dirty)
                let handed = avahiMalloc(size)
                let block = try #require(handed)
                let bytes = UnsafeRawBufferPointer(start: block, count: size)
                #expect(bytes.allSatisfy { $0 == 0 }, "avahi_malloc(\(size)) handed out a dirty block")
                avahiFree(block)
            }
        }
    }
}

// MARK: - Errors

@Suite struct DNSSDErrorTests {
    @Test func mapsCodesToNamedCases() {
        #expect(DNSSDError(code: -65537) == .unknown)
        #expect(DNSSDError(code: -65548) == .nameConflict)
        #expect(DNSSDError(code: -65544)?.name == "kDNSServiceErr_Unsupported")
        #expect("\(DNSSDError.unknown)" == "kDNSServiceErr_Unknown")
    }

    @Test func noErrorIsNotAnError() {
        #expect(DNSSDError(code: 0) == nil)
    }

    @Test func keepsTheNumberOfAnUnknownCode() {
        #expect(DNSSDError(code: -1) == .other(-1))
        #expect(DNSSDError.other(-1).name == "kDNSServiceErr(-1)")
        #expect(DNSSDError.other(-1).code == -1)
    }

    @Test func everyNamedCaseRoundTripsThroughItsCode() {
        let all: [DNSSDError] = [
            .unknown, .noSuchName, .noMemory, .badParam, .badReference, .badState, .badFlags, .unsupported,
            .notInitialized, .alreadyRegistered, .nameConflict, .invalid, .firewall, .incompatible,
            .badInterfaceIndex, .refused, .noSuchRecord, .noAuth, .noSuchKey, .natTraversal, .doubleNAT, .badTime,
        ]
        for error in all {
            #expect(DNSSDError(code: error.code) == error)
            #expect(error.name.hasPrefix("kDNSServiceErr_"))
        }
        #expect(Set(all.map(\.code)).count == all.count)
    }
}

// MARK: - Tracker

@Suite struct DNSSDTrackerTests {
    static let eth0: UInt32 = 2
    static let a = DNSSDServiceKey(name: "alpha", interfaceIndex: eth0)
    static let b = DNSSDServiceKey(name: "beta", interfaceIndex: eth0)
    static let hostA = DNSSDHostKey(host: "vm-2.local.", interfaceIndex: eth0)
    static let hostB = DNSSDHostKey(host: "vm-3.local.", interfaceIndex: eth0)
    static let v4: [UInt8] = [10, 77, 0, 2]
    static let v6LinkLocal: [UInt8] = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7]
    static let v6Global: [UInt8] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]

    func makeTracker(maxServices: Int = 8) -> DNSSDTracker { DNSSDTracker(maxServices: maxServices) }

    /// A tracker that has reported `alpha` on eth0 at 10.77.0.2:5000 with TXT id=a.
    func reportedTracker() -> DNSSDTracker {
        var t = makeTracker()
        _ = t.onBrowse(added: true, name: "alpha", interfaceIndex: Self.eth0)
        _ = t.onResolved(Self.a, hostTarget: Self.hostA.host, port: 5000, txt: ["id": "a"])
        _ = t.onAddress(Self.hostA, address: Self.v4, added: true)
        _ = t.flush()
        return t
    }

    func service(_ endpoints: [Endpoint], key: DNSSDServiceKey = a, host: String = hostA.host, txt: [String: String] = ["id": "a"]) -> DNSSDTracker.Directive {
        .emit(.serviceUpdated(DiscoveredService(instanceName: key.name, interfaceIndex: key.interfaceIndex, hostTarget: host, txt: txt, endpoints: endpoints)))
    }

    @Test func aBrowseAddStartsOneResolveEvenWhenReportedPerProtocol() {
        var t = makeTracker()
        #expect(t.onBrowse(added: true, name: "alpha", interfaceIndex: Self.eth0) == [.startResolve(Self.a)])
        #expect(t.onBrowse(added: true, name: "alpha", interfaceIndex: Self.eth0) == [])
    }

    @Test func theSameNameOnAnotherInterfaceIsAnotherInstance() {
        var t = makeTracker()
        _ = t.onBrowse(added: true, name: "alpha", interfaceIndex: Self.eth0)
        #expect(t.onBrowse(added: true, name: "alpha", interfaceIndex: 1) == [.startResolve(DNSSDServiceKey(name: "alpha", interfaceIndex: 1))])
    }

    @Test func anInstanceIsRemovedOnlyWhenEveryProtocolRemovedIt() {
        var t = reportedTracker()
        _ = t.onBrowse(added: true, name: "alpha", interfaceIndex: Self.eth0)  // second protocol
        #expect(t.onBrowse(added: false, name: "alpha", interfaceIndex: Self.eth0) == [])
        #expect(
            t.onBrowse(added: false, name: "alpha", interfaceIndex: Self.eth0) == [
                .stopResolve(Self.a), .stopAddressQueries(Self.hostA),
                .emit(.serviceRemoved(instanceName: "alpha", interfaceIndex: Self.eth0)),
            ])
    }

    @Test func removingAnInstanceNeverReportedEmitsNothing() {
        var t = makeTracker()
        _ = t.onBrowse(added: true, name: "alpha", interfaceIndex: Self.eth0)
        #expect(t.onBrowse(added: false, name: "alpha", interfaceIndex: Self.eth0) == [.stopResolve(Self.a)])
    }

    @Test func aRemoveForAnUnknownInstanceIsIgnored() {
        var t = makeTracker()
        #expect(t.onBrowse(added: false, name: "ghost", interfaceIndex: Self.eth0) == [])
    }

    @Test func aResolveStartsAddressQueriesButEmitsNothingWithoutAnAddress() {
        var t = makeTracker()
        _ = t.onBrowse(added: true, name: "alpha", interfaceIndex: Self.eth0)
        #expect(t.onResolved(Self.a, hostTarget: Self.hostA.host, port: 5000, txt: ["id": "a"]) == [.startAddressQueries(Self.hostA)])
        #expect(t.flush() == [])
    }

    @Test func answersHandledTogetherGiveOneUpdateWithAllEndpointsInOrder() {
        var t = makeTracker()
        _ = t.onBrowse(added: true, name: "alpha", interfaceIndex: Self.eth0)
        _ = t.onResolved(Self.a, hostTarget: Self.hostA.host, port: 5000, txt: ["id": "a"])
        _ = t.onAddress(Self.hostA, address: Self.v6LinkLocal, added: true)
        _ = t.onAddress(Self.hostA, address: Self.v6Global, added: true)
        _ = t.onAddress(Self.hostA, address: Self.v4, added: true)
        #expect(
            t.flush() == [
                service([
                    .v4(a: 10, b: 77, c: 0, d: 2, port: 5000),
                    .v6(bytes: Self.v6Global, port: 5000, scope: 0),
                    .v6(bytes: Self.v6LinkLocal, port: 5000, scope: Self.eth0),
                ])
            ])
        #expect(t.flush() == [])
    }

    @Test func anAddressReportedOverBothProtocolsStaysUntilBothRemoveIt() {
        var t = reportedTracker()
        _ = t.onAddress(Self.hostA, address: Self.v4, added: true)  // again, over IPv6
        _ = t.onAddress(Self.hostA, address: Self.v6LinkLocal, added: true)
        #expect(t.flush() == [service([.v4(a: 10, b: 77, c: 0, d: 2, port: 5000), .v6(bytes: Self.v6LinkLocal, port: 5000, scope: Self.eth0)])])
        _ = t.onAddress(Self.hostA, address: Self.v4, added: false)
        #expect(t.flush() == [])
        _ = t.onAddress(Self.hostA, address: Self.v4, added: false)
        #expect(t.flush() == [service([.v6(bytes: Self.v6LinkLocal, port: 5000, scope: Self.eth0)])])
    }

    @Test func losingEveryAddressKeepsTheLastReportedValue() {
        var t = reportedTracker()
        _ = t.onAddress(Self.hostA, address: Self.v4, added: false)
        #expect(t.flush() == [])
        _ = t.onAddress(Self.hostA, address: [10, 77, 0, 9], added: true)
        #expect(t.flush() == [service([.v4(a: 10, b: 77, c: 0, d: 9, port: 5000)])])
    }

    @Test func aTXTChangeEmitsAnUpdate() {
        var t = reportedTracker()
        #expect(t.onResolved(Self.a, hostTarget: Self.hostA.host, port: 5000, txt: ["id": "a", "group": "g"]) == [])
        #expect(t.flush() == [service([.v4(a: 10, b: 77, c: 0, d: 2, port: 5000)], txt: ["id": "a", "group": "g"])])
    }

    @Test func anUnchangedResolveEmitsNothing() {
        var t = reportedTracker()
        _ = t.onResolved(Self.a, hostTarget: Self.hostA.host, port: 5000, txt: ["id": "a"])
        #expect(t.flush() == [])
    }

    @Test func aRenamedHostMovesTheAddressQueries() {
        var t = reportedTracker()
        let renamed = DNSSDHostKey(host: "vm-7.local.", interfaceIndex: Self.eth0)
        #expect(
            t.onResolved(Self.a, hostTarget: renamed.host, port: 5000, txt: ["id": "a"]) == [
                .stopAddressQueries(Self.hostA), .startAddressQueries(renamed),
            ])
        #expect(t.flush() == [])  // the new name has no address yet
        _ = t.onAddress(renamed, address: Self.v4, added: true)
        #expect(t.flush() == [service([.v4(a: 10, b: 77, c: 0, d: 2, port: 5000)], host: renamed.host)])
    }

    @Test func instancesOnTheSameHostShareItsAddressQueries() {
        var t = reportedTracker()
        _ = t.onBrowse(added: true, name: "beta", interfaceIndex: Self.eth0)
        #expect(t.onResolved(Self.b, hostTarget: Self.hostA.host, port: 6000, txt: [:]) == [])
        #expect(t.flush() == [service([.v4(a: 10, b: 77, c: 0, d: 2, port: 6000)], key: Self.b, txt: [:])])
        #expect(t.onBrowse(added: false, name: "alpha", interfaceIndex: Self.eth0).contains(.stopAddressQueries(Self.hostA)) == false)
        #expect(t.onBrowse(added: false, name: "beta", interfaceIndex: Self.eth0).contains(.stopAddressQueries(Self.hostA)))
    }

    @Test func instancesBeyondTheBoundWaitForAFreeSlot() {
        var t = makeTracker(maxServices: 1)
        #expect(t.onBrowse(added: true, name: "alpha", interfaceIndex: Self.eth0) == [.startResolve(Self.a)])
        #expect(t.onBrowse(added: true, name: "beta", interfaceIndex: Self.eth0) == [])
        #expect(t.waiting == [Self.b])
        #expect(t.onBrowse(added: false, name: "alpha", interfaceIndex: Self.eth0) == [.stopResolve(Self.a), .startResolve(Self.b)])
        #expect(t.waiting.isEmpty)
    }

    @Test("the resolve slots start at the initial limit, grow by one per ref avahi opened fast up to the bound, and halve (not below the initial limit) when it was slow")
    func slotsFollowHowFastAvahiAnswers() {
        var t = DNSSDTracker(maxServices: 6, initialLimit: 2)
        let keys = (0..<8).map { DNSSDServiceKey(name: "peer\($0)", interfaceIndex: Self.eth0) }
        for key in keys { _ = t.onBrowse(added: true, name: key.name, interfaceIndex: key.interfaceIndex) }
        #expect(t.activeCount == 2 && t.waiting.count == 6)
        #expect(t.onRefOpened(slow: false) == [.startResolve(keys[2])], "a fast ref: one more slot, taken at once")
        for _ in 0..<10 { _ = t.onRefOpened(slow: false) }
        #expect(t.limit == 6 && t.activeCount == 6, "never past the bound")
        #expect(t.onRefOpened(slow: true) == [])
        #expect(t.limit == 3 && t.activeCount == 6, "a slow one halves the limit; those holding a slot keep it")
        _ = t.onRefOpened(slow: true)
        #expect(t.limit == 2)
        // A slot given up is not refilled while more than the limit hold one.
        #expect(t.onBrowse(added: false, name: keys[0].name, interfaceIndex: Self.eth0) == [.stopResolve(keys[0])])
        #expect(t.activeCount == 5)
        // The tracker's own default: no adaptation below the bound.
        #expect(DNSSDTracker(maxServices: 24).limit == 24)
    }

    @Test func aWaitingInstanceThatGoesAwayIsForgotten() {
        var t = makeTracker(maxServices: 1)
        _ = t.onBrowse(added: true, name: "alpha", interfaceIndex: Self.eth0)
        _ = t.onBrowse(added: true, name: "beta", interfaceIndex: Self.eth0)
        #expect(t.onBrowse(added: false, name: "beta", interfaceIndex: Self.eth0) == [])
        #expect(t.onBrowse(added: false, name: "alpha", interfaceIndex: Self.eth0) == [.stopResolve(Self.a)])
    }

    @Test func resultsForAnInstanceAlreadyRemovedAreIgnored() {
        var t = reportedTracker()
        _ = t.onBrowse(added: false, name: "alpha", interfaceIndex: Self.eth0)
        #expect(t.onResolved(Self.a, hostTarget: Self.hostA.host, port: 5000, txt: [:]) == [])
        #expect(t.onAddress(Self.hostA, address: [1, 2, 3, 4], added: true) == [])
        #expect(t.flush() == [])
    }

    @Test func afterAResetEverythingIsReportedAgain() {
        var t = reportedTracker()
        t.reset()
        #expect(t.services.isEmpty && t.hosts.isEmpty)
        #expect(t.onBrowse(added: true, name: "alpha", interfaceIndex: Self.eth0) == [.startResolve(Self.a)])
        _ = t.onResolved(Self.a, hostTarget: Self.hostA.host, port: 5000, txt: ["id": "a"])
        _ = t.onAddress(Self.hostA, address: Self.v4, added: true)
        #expect(t.flush() == [service([.v4(a: 10, b: 77, c: 0, d: 2, port: 5000)])])
    }

    @Test func pendingUpdatesAreKnownUntilFlushed() {
        var t = makeTracker()
        _ = t.onBrowse(added: true, name: "alpha", interfaceIndex: Self.eth0)
        #expect(!t.hasPendingUpdates)
        _ = t.onResolved(Self.a, hostTarget: Self.hostA.host, port: 5000, txt: [:])
        #expect(t.hasPendingUpdates)
        _ = t.flush()
        #expect(!t.hasPendingUpdates)
    }

    @Test func anUpdateCollectedBeforeARemovalIsDropped() {
        var t = reportedTracker()
        _ = t.onAddress(Self.hostA, address: Self.v4, added: false)
        _ = t.onAddress(Self.hostA, address: Self.v6LinkLocal, added: true)
        #expect(t.onBrowse(added: false, name: "alpha", interfaceIndex: Self.eth0).last == .emit(.serviceRemoved(instanceName: "alpha", interfaceIndex: Self.eth0)))
        #expect(t.flush() == [])
    }

    @Test func addressesOfTheWrongSizeAreIgnored() {
        var t = reportedTracker()
        _ = t.onAddress(Self.hostA, address: [1, 2, 3], added: true)
        #expect(t.flush() == [])
    }
}

// MARK: - Discovery object

/// Whether an avahi-daemon answers on its socket in this network namespace.
func avahiDaemonAnswers(path: String = "/run/avahi-daemon/socket") -> Bool {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        for (i, byte) in path.utf8.prefix(raw.count - 1).enumerated() { raw[i] = byte }
    }
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0 }
    }
}

// The real thread: a regression that keeps a stream open must fail, not hang.
@Suite(.timeLimit(.minutes(1))) struct DNSSDDiscoveryTests {
    @Test func cutsLongInstanceNamesAtACharacterBoundary() {
        let name = String(repeating: "é", count: 40)  // 80 bytes
        #expect(DNSSDDiscovery.truncated(name) == String(repeating: "é", count: 31))
        #expect(DNSSDDiscovery.truncated("living room") == "living room")
    }

    @Test func startRefusesATXTRecordThatDoesNotEncode() {
        let discovery = DNSSDDiscovery(serviceType: "_lockstep-test._udp", logger: Logger(label: "test"))
        #expect(throws: TXTRecordError.emptyKey) {
            _ = try discovery.start(instanceName: "t", port: 1, txt: ["": "x"])
        }
    }

    /// Runs the real thread. Without avahi (the usual test machine) the first event is
    /// `daemonUnavailable` with a one-line reason; with one, `daemonAvailable`. Either way stop()
    /// finishes the stream.
    @Test func stopEndsTheThreadAndFinishesTheStream() async throws {
        let daemon = avahiDaemonAnswers()
        let discovery = DNSSDDiscovery(serviceType: "_lockstep-test._udp", logger: Logger(label: "test"))
        let events = try discovery.start(instanceName: "lockstep test", port: 9, txt: ["id": "test"])
        var iterator = events.makeAsyncIterator()
        let first = await iterator.next()
        switch first {
        case .daemonUnavailable(let reason)?:
            #expect(!daemon, "avahi-daemon answers, yet: \(reason)")
            #expect(!reason.isEmpty && !reason.contains("\n"))
        case .daemonAvailable?:
            #expect(daemon)
        default: Issue.record("unexpected first event \(String(describing: first))")
        }
        discovery.stop()
        discovery.stop()
        while await iterator.next() != nil {}
    }

    @Test func aSecondStartGetsAFinishedStream() async throws {
        let discovery = DNSSDDiscovery(serviceType: "_lockstep-test._udp", logger: Logger(label: "test"))
        _ = try discovery.start(instanceName: "t", port: 9, txt: [:])
        let second = try discovery.start(instanceName: "t", port: 9, txt: [:])
        var count = 0
        for await _ in second { count += 1 }
        #expect(count == 0)
        discovery.stop()
    }

    @Test func theMailboxDropsCommandsAfterStop() {
        let mailbox = DNSSDMailbox()!
        mailbox.send(.updateTXT([0]))
        mailbox.send(.stop)
        mailbox.send(.updateTXT([0]))
        #expect(mailbox.take().count == 2)
        #expect(mailbox.take().isEmpty)
    }
}

/// Review finding M5: services of another group (or junk) cannot hold every resolve slot.
@Suite struct DNSSDParkingTests {
    static let eth0: UInt32 = 2
    static func key(_ n: String) -> DNSSDServiceKey { DNSSDServiceKey(name: n, interfaceIndex: eth0) }

    @Test("an instance of another group gives its resolve slot to the next one waiting, and is withdrawn if it was reported")
    func foreignInstanceIsParked() {
        var t = DNSSDTracker(maxServices: 2)
        _ = t.onOwnTXT(["g": "ours", "v": "1", "id": "me"])
        #expect(t.onBrowse(added: true, name: "a", interfaceIndex: Self.eth0) == [.startResolve(Self.key("a"))])
        #expect(t.onBrowse(added: true, name: "b", interfaceIndex: Self.eth0) == [.startResolve(Self.key("b"))])
        #expect(t.onBrowse(added: true, name: "c", interfaceIndex: Self.eth0) == [])
        #expect(t.onResolved(Self.key("a"), hostTarget: "a.local.", port: 1, txt: ["g": "theirs", "v": "1", "id": "x"]) == [.stopResolve(Self.key("a")), .startResolve(Self.key("c"))])
        // A reported instance that moves to another group is withdrawn.
        _ = t.onResolved(Self.key("b"), hostTarget: "b.local.", port: 1, txt: ["g": "ours", "v": "1", "id": "y"])
        _ = t.onAddress(DNSSDHostKey(host: "b.local.", interfaceIndex: Self.eth0), address: [10, 0, 0, 2], added: true)
        #expect(t.flush().count == 1)
        let moved = t.onResolved(Self.key("b"), hostTarget: "b.local.", port: 1, txt: ["g": "theirs", "v": "1", "id": "y"])
        #expect(moved.contains(.emit(.serviceRemoved(instanceName: "b", interfaceIndex: Self.eth0))))
        #expect(moved.contains(.stopAddressQueries(DNSSDHostKey(host: "b.local.", interfaceIndex: Self.eth0))))
        #expect(t.activeCount == 1)
        // Our own group changes: the parked ones get their turn again.
        #expect(t.onOwnTXT(["g": "theirs", "v": "1", "id": "me"]) == [.startResolve(Self.key("a"))])
        #expect(t.waiting == [Self.key("b")])
    }

    @Test("an instance showing the group's tag of another day is kept once those tags are recognised (the tag is new every day)")
    func recognisedTagKept() {
        var t = DNSSDTracker(maxServices: 2)
        _ = t.onOwnTXT(["g": "today", "v": "1", "id": "me"])
        _ = t.onBrowse(added: true, name: "a", interfaceIndex: Self.eth0)
        #expect(t.onResolved(Self.key("a"), hostTarget: "a.local.", port: 1, txt: ["g": "yesterday", "v": "1", "id": "x"]) == [.stopResolve(Self.key("a"))])
        #expect(t.onRecognisedTags(["yesterday", "today", "tomorrow"]) == [.startResolve(Self.key("a"))])
        #expect(t.onResolved(Self.key("a"), hostTarget: "a.local.", port: 1, txt: ["g": "yesterday", "v": "1", "id": "x"]).contains(.startAddressQueries(DNSSDHostKey(host: "a.local.", interfaceIndex: Self.eth0))))
        #expect(t.onResolved(Self.key("a"), hostTarget: "a.local.", port: 1, txt: ["g": "yesterday", "v": "2", "id": "x"]).contains(.stopResolve(Self.key("a"))), "the version must still match")
    }

    @Test("while instances wait, those reported or unanswered for a whole round give their slot up, so every instance gets resolved in turn")
    func slotsAreTimeShared() {
        var t = DNSSDTracker(maxServices: 2)
        _ = t.onOwnTXT(["g": "ours", "v": "2"])
        for n in ["a", "b", "c", "d", "e"] { _ = t.onBrowse(added: true, name: n, interfaceIndex: Self.eth0) }
        // a and b hold the slots with our tag and an address (fakes would look just like this).
        for n in ["a", "b"] {
            _ = t.onResolved(Self.key(n), hostTarget: "\(n).local.", port: 1, txt: ["g": "ours", "v": "2", "id": n])
            _ = t.onAddress(DNSSDHostKey(host: "\(n).local.", interfaceIndex: Self.eth0), address: [10, 0, 0, 9], added: true)
        }
        #expect(t.flush().count == 2)
        // Reported: they give their slots up at the next round.
        let second = t.rotate()
        #expect(second.contains(.startResolve(Self.key("c"))) && second.contains(.startResolve(Self.key("d"))))
        #expect(second.contains(.stopResolve(Self.key("a"))) && second.contains(.stopResolve(Self.key("b"))))
        #expect(!second.contains { if case .emit = $0 { true } else { false } }, "what was reported stays reported")
        #expect(t.waiting == [Self.key("e"), Self.key("a"), Self.key("b")])
        #expect(t.rotate() == [], "c and d, not answered yet, hold theirs for a whole round first")
        _ = t.rotate()
        #expect(t.services[Self.key("e")]?.active == true)
        // a's turn again: the same answer reports nothing new.
        #expect(t.services[Self.key("a")]?.active == true)
        _ = t.onResolved(Self.key("a"), hostTarget: "a.local.", port: 1, txt: ["g": "ours", "v": "2", "id": "a"])
        _ = t.onAddress(DNSSDHostKey(host: "a.local.", interfaceIndex: Self.eth0), address: [10, 0, 0, 9], added: true)
        #expect(t.flush().isEmpty)
    }

    @Test("another group's device with an open invite is not parked; while a join seeks inviters nothing is, and after it the others are parked again")
    func invitersStayOrWake() {
        var t = DNSSDTracker(maxServices: 4)
        _ = t.onOwnTXT(["g": "ours", "v": "1", "id": "me"])
        _ = t.onBrowse(added: true, name: "a", interfaceIndex: Self.eth0)
        _ = t.onBrowse(added: true, name: "b", interfaceIndex: Self.eth0)
        #expect(t.onResolved(Self.key("a"), hostTarget: "a.local.", port: 1, txt: ["g": "theirs", "v": "1", "id": "x"]) == [.stopResolve(Self.key("a"))])
        let inviting = t.onResolved(Self.key("b"), hostTarget: "b.local.", port: 1, txt: ["g": "theirs", "v": "1", "id": "y", "inv": "1"])
        #expect(!inviting.contains(.stopResolve(Self.key("b"))))
        #expect(t.activeCount == 1)
        // A join starts: "a" may open its invite after it was parked; its TXT shows it later.
        #expect(t.seekInviters(true) == [.startResolve(Self.key("a"))])
        #expect(!t.onResolved(Self.key("a"), hostTarget: "a.local.", port: 1, txt: ["g": "theirs", "v": "1", "id": "x"]).contains(.stopResolve(Self.key("a"))))
        #expect(t.activeCount == 2)
        // The join ends: "a" (no invite) is parked again, "b" (inviting) stays.
        #expect(t.seekInviters(false).contains(.stopResolve(Self.key("a"))))
        #expect(t.activeCount == 1)
    }
}
