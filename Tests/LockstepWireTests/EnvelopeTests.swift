import LockstepCore
import Testing

@testable import LockstepPeerWire

@Suite("Envelope")
struct EnvelopeTests {
    let alice = PeerID(high: 1, low: 1)
    let bob = PeerID(high: 2, low: 2)
    let key = GroupKey(bytes: Array(repeating: 7, count: 32), epoch: 1)!

    @Test("a sealed datagram opens with the group key and names its sender")
    func roundTrip() throws {
        let sealer = EnvelopeSealer(sender: alice, incarnation: 9, key: key)
        let opener = EnvelopeOpener(me: bob, keys: [key])
        let datagram = sealer.seal([1, 2, 3])
        #expect(datagram.count == Envelope.headerBytes + 64 + Envelope.tagBytes)
        let (header, plaintext) = try opener.open(datagram)
        #expect(plaintext == [1, 2, 3])
        #expect(header.sender == alice)
        #expect(header.incarnation == 9)
        #expect(header.sequence == 1)
    }

    @Test("the sealed box a datagram is opened from is its nonce, ciphertext and tag, as the sealer made them")
    func sealedBoxOfADatagram() throws {
        let sealer = EnvelopeSealer(sender: alice, incarnation: 9, key: key, after: 0x0102_0304_0506_0707)
        let datagram = sealer.seal([9, 8, 7])
        let box = try #require(Envelope.sealedBox(of: datagram, sequence: 0x0102_0304_0506_0708))
        #expect(Array(box.nonce) == [0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8])
        #expect(Array(box.ciphertext) == Array(datagram[Envelope.headerBytes..<(datagram.count - Envelope.tagBytes)]))
        #expect(Array(box.tag) == Array(datagram.suffix(Envelope.tagBytes)))
        #expect(Envelope.sealedBox(of: Array(datagram.prefix(Envelope.headerBytes + Envelope.tagBytes - 1)), sequence: 1) == nil)
    }

    @Test("messages are padded to a few sizes, so a datagram's length shows only its size class; a length or padding no sealer makes is refused")
    func padding() throws {
        let sealer = EnvelopeSealer(sender: alice, incarnation: 9, key: key)
        let opener = EnvelopeOpener(me: bob, keys: [key])
        for (length, padded) in [(0, 64), (63, 64), (64, 128), (200, 256), (511, 512), (1_000, 1_024), (Envelope.maxMessageBytes, 1_400)] {
            let message = [UInt8](repeating: 0, count: length)
            let datagram = sealer.seal(message)
            #expect(datagram.count == Envelope.headerBytes + padded + Envelope.tagBytes, "\(length) bytes")
            #expect(try opener.open(datagram).plaintext == message, "trailing zeros of the message itself are kept")
        }
        let sizes = [PeerMessage.goodbye, .keyAck(epoch: 3), .clockRequest(exchange: 1, t1: PeerTime(ns: 5)), .clockReply(exchange: 1, echo: 5, t2: PeerTime(ns: 6), t3: PeerTime(ns: 7))]
            .map { sealer.seal($0.encoded()).count }
        #expect(Set(sizes) == [116])
        var cut = sealer.seal([1])
        cut.removeLast()
        #expect(throws: Envelope.Rejection.badPadding) { try opener.open(cut) }
        // Authentic, but not padded as the sealer pads: refused after opening, nothing kept.
        #expect(Envelope.unpad([1] + [UInt8](repeating: 0, count: 63)) == nil)
        #expect(Envelope.unpad([1, 0x80] + [UInt8](repeating: 0, count: 61)) == nil, "not a padded size")
        #expect(Envelope.unpad([1, 0x80, 0] + [UInt8](repeating: 0, count: 61)) == [1])
    }

    @Test("the plaintext does not appear in the datagram")
    func encrypted() {
        let sealer = EnvelopeSealer(sender: alice, incarnation: 9, key: key)
        let secret = Array("pause everyone's film".utf8)
        let datagram = sealer.seal(secret)
        #expect(!datagram.indices.dropLast(secret.count).contains { Array(datagram[$0..<$0 + secret.count]) == secret })
    }

    @Test("another group's key is refused as an authentication failure")
    func otherGroup() {
        let stranger = EnvelopeSealer(sender: alice, incarnation: 9, key: GroupKey(bytes: Array(repeating: 8, count: 32), epoch: 1)!)
        let opener = EnvelopeOpener(me: bob, keys: [key])
        #expect(throws: Envelope.Rejection.authenticationFailed) { try opener.open(stranger.seal([1])) }
    }

    @Test("a tampered byte anywhere (header or body) is refused")
    func tampered() {
        let sealer = EnvelopeSealer(sender: alice, incarnation: 9, key: key)
        let opener = EnvelopeOpener(me: bob, keys: [key])
        let datagram = sealer.seal([1, 2, 3, 4])
        for i in 4..<datagram.count {
            var bad = datagram
            bad[i] ^= 0x40
            #expect(throws: Envelope.Rejection.self) { try opener.open(bad) }
        }
    }

    @Test("a replayed datagram is refused; reordered ones within the window are accepted")
    func replay() throws {
        let sealer = EnvelopeSealer(sender: alice, incarnation: 9, key: key)
        let opener = EnvelopeOpener(me: bob, keys: [key])
        let d1 = sealer.seal([1]), d2 = sealer.seal([2]), d3 = sealer.seal([3])
        _ = try opener.open(d3)
        _ = try opener.open(d1)
        #expect(throws: Envelope.Rejection.replayed) { try opener.open(d1) }
        _ = try opener.open(d2)
        #expect(throws: Envelope.Rejection.replayed) { try opener.open(d3) }
    }

    @Test("datagrams older than the replay window are refused")
    func window() throws {
        let sealer = EnvelopeSealer(sender: alice, incarnation: 9, key: key)
        let opener = EnvelopeOpener(me: bob, keys: [key])
        let old = sealer.seal([0])
        for _ in 0..<Int(EnvelopeOpener.replayWindow) { _ = sealer.seal([1]) }
        _ = try opener.open(sealer.seal([2]))
        #expect(throws: Envelope.Rejection.replayed) { try opener.open(old) }
    }

    @Test("after a restart (new incarnation) the old incarnation's datagrams are stale")
    func incarnations() throws {
        let old = EnvelopeSealer(sender: alice, incarnation: 9, key: key)
        let new = EnvelopeSealer(sender: alice, incarnation: 10, key: key)
        let opener = EnvelopeOpener(me: bob, keys: [key])
        let late = old.seal([1])
        _ = try opener.open(new.seal([2]))
        #expect(throws: Envelope.Rejection.staleIncarnation) { try opener.open(late) }
    }

    @Test("an incarnation more than a day ahead of the receiver's wall clock is refused (it would lock its sender out)")
    func implausibleIncarnation() throws {
        let wall: UInt64 = 1_795_300_000_000_000
        let opener = EnvelopeOpener(me: bob, keys: [key])
        let forged = EnvelopeSealer(sender: alice, incarnation: wall + EnvelopeOpener.incarnationLeadMicros + 1, key: key)
        #expect(throws: Envelope.Rejection.implausibleIncarnation) { try opener.open(forged.seal([1]), wallClockMicros: wall) }
        let honest = EnvelopeSealer(sender: alice, incarnation: wall + 1_000_000, key: key)
        _ = try opener.open(honest.seal([1]), wallClockMicros: wall)
    }

    @Test("a lower incarnation is stale while the higher one speaks, and taken once the higher one has been silent 10 s")
    func lowerIncarnationAfterSilence() throws {
        let opener = EnvelopeOpener(me: bob, keys: [key])
        let high = EnvelopeSealer(sender: alice, incarnation: 1_000, key: key)
        let real = EnvelopeSealer(sender: alice, incarnation: 10, key: key)
        _ = try opener.open(high.seal([1]), hostNow: 1_000_000_000)
        #expect(throws: Envelope.Rejection.staleIncarnation) { try opener.open(real.seal([2]), hostNow: 5_000_000_000) }
        let (h, _) = try opener.open(real.seal([3]), hostNow: 11_000_000_001)
        #expect(h.incarnation == 10)
        // The lower one is now the sender's: its datagrams keep opening.
        _ = try opener.open(real.seal([4]), hostNow: 11_100_000_000)
    }

    @Test("a higher incarnation that said goodbye gives way to a lower one at once; another incarnation's goodbye changes nothing")
    func lowerIncarnationAfterGoodbye() throws {
        let opener = EnvelopeOpener(me: bob, keys: [key])
        let high = EnvelopeSealer(sender: alice, incarnation: 1_000, key: key)
        let real = EnvelopeSealer(sender: alice, incarnation: 10, key: key)
        let captured = high.seal([1])
        _ = try opener.open(captured, hostNow: 1_000_000_000)
        opener.departed(alice, incarnation: 999)
        #expect(throws: Envelope.Rejection.staleIncarnation) { try opener.open(real.seal([2]), hostNow: 1_100_000_000) }
        opener.departed(alice, incarnation: 1_000)
        #expect(throws: Envelope.Rejection.replayed) { try opener.open(captured, hostNow: 1_150_000_000) }
        let (h, _) = try opener.open(real.seal([3]), hostNow: 1_200_000_000)
        #expect(h.incarnation == 10)
        _ = try opener.open(real.seal([4]), hostNow: 1_300_000_000)
    }

    @Test("bad headers are named: not Lockstep, unknown version (versions 1 to 3 included), too short, from myself")
    func headers() {
        let opener = EnvelopeOpener(me: alice, keys: [key])
        #expect(throws: Envelope.Rejection.notLockstep) { try opener.open(Array("GET / HTTP/1.1".utf8)) }
        #expect(throws: Envelope.Rejection.unknownVersion(1)) { try opener.open([0x4C, 0x4B, 1] + Array(repeating: 0, count: 60)) }
        #expect(throws: Envelope.Rejection.unknownVersion(2)) { try opener.open([0x4C, 0x4B, 2] + Array(repeating: 0, count: 60)) }
        #expect(throws: Envelope.Rejection.unknownVersion(3)) { try opener.open([0x4C, 0x4B, 3] + Array(repeating: 0, count: 60)) }
        #expect(throws: Envelope.Rejection.unknownVersion(5)) { try opener.open([0x4C, 0x4B, 5] + Array(repeating: 0, count: 60)) }
        #expect(throws: Envelope.Rejection.tooShort) { try opener.open([0x4C, 0x4B, Envelope.version, 1]) }
        #expect(throws: Envelope.Rejection.fromSelf) { try opener.open(EnvelopeSealer(sender: alice, incarnation: 1, key: key).seal([1])) }
    }

    @Test("an authentic datagram with this agent's id and another incarnation is a clone (a copied state directory); its own, or a forgery, is from_self")
    func clones() {
        let opener = EnvelopeOpener(me: alice, incarnation: 10, keys: [key])
        #expect(throws: Envelope.Rejection.fromSelf) { try opener.open(EnvelopeSealer(sender: alice, incarnation: 10, key: key).seal([1])) }
        #expect(throws: Envelope.Rejection.clone) { try opener.open(EnvelopeSealer(sender: alice, incarnation: 11, key: key).seal([1])) }
        let stranger = GroupKey(bytes: Array(repeating: 0x77, count: 32), epoch: key.epoch)!
        #expect(throws: Envelope.Rejection.fromSelf) { try opener.open(EnvelopeSealer(sender: alice, incarnation: 12, key: stranger).seal([1])) }
    }

    @Test("during a rotation both the old and the new key open datagrams")
    func rotation() throws {
        let next = GroupKey(bytes: Array(repeating: 9, count: 32), epoch: 2)!
        let opener = EnvelopeOpener(me: bob, keys: [key, next])
        let sealer = EnvelopeSealer(sender: alice, incarnation: 1, key: key)
        _ = try opener.open(sealer.seal([1]))
        sealer.use(next)
        let (header, _) = try opener.open(sealer.seal([2]))
        #expect(header.epochByte == 2)
    }
}

@Suite("Join codes")
struct JoinCodeTests {
    @Test("a join code carries the group's id, key and epoch to another device")
    func roundTrip() throws {
        var g = GroupIdentity(name: "home", key: .random(epoch: 3))
        g.rotate(to: .random(epoch: 4))
        let code = JoinCode.make(g)
        #expect(code.hasPrefix("lk1-"))
        let parsed = try JoinCode.parse(code.uppercased().replacingOccurrences(of: "LK1-", with: "lk1-"), name: "elsewhere")
        #expect(parsed.key == g.key)
        #expect(parsed.epoch == 4)
        #expect(parsed.id == g.id)
        #expect(parsed.tag == g.tag)
        #expect(parsed.name == "elsewhere")
    }

    @Test("a typo in a join code is caught by its checksum")
    func typo() {
        let code = JoinCode.make(GroupIdentity(name: "home", key: .random()))
        var chars = Array(code)
        let i = chars.count / 2 + (chars[chars.count / 2] == "-" ? 1 : 0)
        chars[i] = chars[i] == "a" ? "b" : "a"
        #expect(throws: JoinCode.ParseError.badChecksum) { try JoinCode.parse(String(chars), name: "x") }
        #expect(throws: JoinCode.ParseError.notAJoinCode) { try JoinCode.parse("hello", name: "x") }
    }

    @Test("the public tag survives key rotation and does not change with the key")
    func tagStable() {
        var g = GroupIdentity(name: "home", key: .random())
        let before = g.tag
        g.rotate(to: .random(epoch: 2))
        #expect(g.tag == before)
    }

    @Test("the public tag is new every day, the same for every holder of the group id, and members recognise the days either side")
    func tagDaily() {
        let g = GroupIdentity(name: "home", key: .random())
        var other = g
        other.rotate(to: .random(epoch: 2))
        let day: Int64 = 20_417
        #expect(g.tag(day: day) != g.tag(day: day + 1))
        #expect(other.tag(day: day) == g.tag(day: day))
        #expect(g.tag(day: day).count == 16)
        #expect(g.recognisedTags(day: day) == [g.tag(day: day - 1), g.tag(day: day), g.tag(day: day + 1)])
        #expect(!g.recognisedTags(day: day).contains(g.tag(day: day + 2)))
        #expect(GroupIdentity(name: "home", key: .random()).tag(day: day) != g.tag(day: day))
        #expect(GroupKey.tagDay(unixSeconds: 86_399) == 0 && GroupKey.tagDay(unixSeconds: 86_400) == 1 && GroupKey.tagDay(unixSeconds: -1) == -1)
    }
}

@Suite("Envelope key changes")
struct EnvelopeKeyChangeTests {
    @Test("after switching to another group's key (same epoch), the old group's datagrams are refused even from a known sender")
    func switchGroups() throws {
        let a = PeerID(high: 1, low: 1), b = PeerID(high: 2, low: 2)
        let old = GroupKey(bytes: Array(repeating: 1, count: 32), epoch: 1)!
        let new = GroupKey(bytes: Array(repeating: 2, count: 32), epoch: 1)!
        let sealer = EnvelopeSealer(sender: a, incarnation: 1, key: old)
        let opener = EnvelopeOpener(me: b, keys: [old])
        _ = try opener.open(sealer.seal([1]))
        opener.accept([new])
        #expect(throws: Envelope.Rejection.authenticationFailed) { try opener.open(sealer.seal([2])) }
    }

    @Test("a rotation keeps the replay window: a datagram seen before the rotation is still a replay")
    func rotationKeepsReplayWindow() throws {
        let a = PeerID(high: 1, low: 1), b = PeerID(high: 2, low: 2)
        let k1 = GroupKey(bytes: Array(repeating: 1, count: 32), epoch: 1)!
        let k2 = GroupKey(bytes: Array(repeating: 3, count: 32), epoch: 2)!
        let sealer = EnvelopeSealer(sender: a, incarnation: 1, key: k1)
        let opener = EnvelopeOpener(me: b, keys: [k1])
        let d = sealer.seal([1])
        _ = try opener.open(d)
        opener.accept([k2, k1])
        #expect(throws: Envelope.Rejection.replayed) { try opener.open(d) }
    }
}
