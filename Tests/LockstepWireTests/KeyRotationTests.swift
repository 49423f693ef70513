import Foundation
import LockstepCore
import LockstepPeerWire
import Testing

/// The group key's protocol, instance by instance: inputs in, directives out, no sockets.
@Suite("Key rotation")
struct KeyRotationTests {
    static let alice = PeerID(high: 0, low: 1)
    static let bob = PeerID(high: 0, low: 2)
    static let source = Endpoint.v4(a: 10, b: 0, c: 0, d: 2, port: 4000)
    static let t0 = LocalTime(ns: 1_000_000_000_000)

    static func group(epoch: UInt32 = 1) -> GroupIdentity {
        GroupIdentity(name: "home", key: GroupKey(bytes: Array(repeating: 7, count: 32), epoch: epoch)!)
    }

    static let newBytes = Array(repeating: UInt8(9), count: 32)

    /// The directives inside the first `install`, and the group it installs.
    static func installed(_ d: [KeyRotation.Directive]) -> (GroupIdentity, [KeyRotation.Directive])? {
        for case .install(let g, let then) in d { return (g, then) }
        return nil
    }

    @Test("rotating installs the next epoch, accepts both keys, sends the key to every reachable peer, and seals under it after the grace")
    func rotate() throws {
        var k = KeyRotation(group: Self.group())
        let d = try k.onRotate(newKeyBytes: Self.newBytes, reachable: [Self.bob], now: Self.t0)
        let (g, then) = try #require(Self.installed(d))
        #expect(g.epoch == 2 && g.previousEpoch == 1)
        let next = GroupKey(bytes: Self.newBytes, epoch: 2)!
        #expect(then == [.accept([next, Self.group().currentKey]), .send(.keyUpdate(epoch: 2, key: Self.newBytes), to: Self.bob)])
        // Unacknowledged: sent again every 200 ms; sealing switches after 3 s.
        #expect(k.nextDeadline == Self.t0 + .milliseconds(200))
        #expect(k.onTick(now: Self.t0 + .milliseconds(200), reachable: { _ in true }) == [.send(.keyUpdate(epoch: 2, key: Self.newBytes), to: Self.bob)])
        k.onKeyAck(epoch: 2, from: Self.bob)
        #expect(k.nextDeadline == Self.t0 + .seconds(3))
        #expect(k.onTick(now: Self.t0 + .seconds(3), reachable: { _ in true }) == [.sealWith(next)])
        #expect(k.nextDeadline == nil)
    }

    @Test("retransmissions stop after ten tries and skip unreachable peers")
    func retriesBounded() throws {
        var k = KeyRotation(group: Self.group())
        _ = try k.onRotate(newKeyBytes: Self.newBytes, reachable: [Self.alice, Self.bob], now: Self.t0)
        var sends = 0
        var t = Self.t0
        for _ in 0..<14 {
            t += .milliseconds(200)
            sends += k.onTick(now: t, reachable: { $0 == Self.bob }).filter { if case .send = $0 { true } else { false } }.count
        }
        #expect(sends == 10)
    }

    @Test("a key update under the current key for the next epoch is installed, then acknowledged")
    func install() throws {
        var k = KeyRotation(group: Self.group())
        let d = k.onKeyUpdate(epoch: 2, key: Self.newBytes, from: Self.bob, source: Self.source, sealedWith: 1, now: Self.t0)
        let (g, then) = try #require(Self.installed(d))
        #expect(g.epoch == 2)
        #expect(then.last == .reply(.keyAck(epoch: 2), to: Self.source, sealedWith: nil))
        // A retransmission of the same key: acknowledged again, nothing reinstalled.
        #expect(k.onKeyUpdate(epoch: 2, key: Self.newBytes, from: Self.bob, source: Self.source, sealedWith: 1, now: Self.t0) == [.reply(.keyAck(epoch: 2), to: Self.source, sealedWith: nil)])
    }

    @Test("the previous key cannot install a key: an update sealed under another epoch is refused")
    func previousKeyRefused() {
        var k = KeyRotation(group: Self.group(epoch: 5))
        let d = k.onKeyUpdate(epoch: 6, key: Self.newBytes, from: Self.bob, source: Self.source, sealedWith: 4, now: Self.t0)
        #expect(d == [.refused(.notUnderCurrentKey, from: Self.bob)])
        #expect(k.group.epoch == 5)
    }

    @Test("an update that jumps epochs (to the last one, blocking every later rotation) is refused")
    func epochJumpRefused() {
        var k = KeyRotation(group: Self.group(epoch: 5))
        let d = k.onKeyUpdate(epoch: .max, key: Self.newBytes, from: Self.bob, source: Self.source, sealedWith: 5, now: Self.t0)
        #expect(d == [.refused(.notNextEpoch, from: Self.bob)])
        #expect(k.group.epoch == 5)
    }

    @Test("at the last epoch a rotation is refused with an error, never a wrapped epoch")
    func exhausted() {
        var k = KeyRotation(group: Self.group(epoch: KeyRotation.lastEpoch))
        #expect(throws: KeyRotation.RotationError.epochExhausted) { try k.onRotate(newKeyBytes: Self.newBytes, reachable: [], now: Self.t0) }
        var j = KeyRotation(group: Self.group(epoch: .max))
        #expect(throws: KeyRotation.RotationError.epochExhausted) { try j.onRotate(newKeyBytes: Self.newBytes, reachable: [], now: Self.t0) }
    }

    @Test("a key that cannot be saved is not kept: the rotation keeps the group it had")
    func installFailure() throws {
        var k = KeyRotation(group: Self.group())
        _ = try k.onRotate(newKeyBytes: Self.newBytes, reachable: [Self.bob], now: Self.t0)
        k.onInstallFailed()
        #expect(k.group == Self.group())
        #expect(k.nextDeadline == nil)
    }

    @Test("a peer still sealing under the previous key is told the current one, sealed under its own, at most once a second")
    func hints() throws {
        var k = KeyRotation(group: Self.group())
        _ = try k.onRotate(newKeyBytes: Self.newBytes, reachable: [], now: Self.t0)
        // During our grace period everyone still speaks the old key: no hint.
        #expect(k.onDatagram(from: Self.bob, source: Self.source, sealedWith: 1, now: Self.t0 + .seconds(1)) == [])
        _ = k.onTick(now: Self.t0 + .seconds(3), reachable: { _ in true })
        let hint = k.onDatagram(from: Self.bob, source: Self.source, sealedWith: 1, now: Self.t0 + .seconds(4))
        #expect(hint == [.reply(.keyUpdate(epoch: 2, key: Self.newBytes), to: Self.source, sealedWith: Self.group().currentKey)])
        #expect(k.onDatagram(from: Self.bob, source: Self.source, sealedWith: 1, now: Self.t0 + .milliseconds(4_500)) == [])
        #expect(k.onDatagram(from: Self.bob, source: Self.source, sealedWith: 2, now: Self.t0 + .seconds(6)) == [])
    }

    @Test("hints are remembered for a bounded number of senders: a flood of fresh sender ids does not grow memory")
    func hintsBounded() throws {
        var config = KeyRotation.Configuration()
        config.maxHints = 8
        var k = KeyRotation(group: Self.group(), configuration: config)
        _ = try k.onRotate(newKeyBytes: Self.newBytes, reachable: [], now: Self.t0)
        _ = k.onTick(now: Self.t0 + .seconds(3), reachable: { _ in true })
        for i in 0..<1_000 {
            let d = k.onDatagram(from: PeerID(high: 7, low: UInt64(i)), source: Self.source, sealedWith: 1, now: Self.t0 + .seconds(4))
            #expect(d.count == 1)
        }
        // (The bound is internal; what can be observed is that it still answers fresh senders, and
        // the sender answered last is still rate-limited.)
        #expect(k.onDatagram(from: PeerID(high: 7, low: 999), source: Self.source, sealedWith: 1, now: Self.t0 + .seconds(4)) == [])
    }

    @Test("switching groups accepts and seals under the new group's key alone")
    func switchGroup() throws {
        var k = KeyRotation(group: Self.group())
        let other = GroupIdentity(name: "den", key: GroupKey(bytes: Self.newBytes, epoch: 1)!)
        let (g, then) = try #require(Self.installed(k.onSwitch(to: other)))
        #expect(g == other)
        #expect(then == [.accept([other.currentKey]), .sealWith(other.currentKey)])
    }

    @Test("a saved group whose key is not 32 bytes or whose id is not hex is refused with a clear error")
    func corruptGroupFile() throws {
        let good = try JSONEncoderLike.encode(Self.group())
        #expect(throws: Never.self) { try JSONEncoderLike.decode(good) }
        let shortKey = good.replacingOccurrences(of: "\"key\":[7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7]", with: "\"key\":[7,7]")
        #expect(shortKey != good)
        #expect(throws: (any Error).self) { try JSONEncoderLike.decode(shortKey) }
        let badID = good.replacingOccurrences(of: Self.group().id, with: "zz" + Self.group().id.dropFirst(2))
        #expect(throws: (any Error).self) { try JSONEncoderLike.decode(badID) }
    }
}

/// A group file's JSON, as the state directory writes it.
enum JSONEncoderLike {
    static func encode(_ g: GroupIdentity) throws -> String {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        return String(decoding: try e.encode(g), as: UTF8.self)
    }

    @discardableResult
    static func decode(_ text: String) throws -> GroupIdentity {
        try JSONDecoder().decode(GroupIdentity.self, from: Data(text.utf8))
    }
}
