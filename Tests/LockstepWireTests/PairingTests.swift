import LockstepCore
import LockstepPeerWire
import Testing

/// ``Pairing`` driven by its inputs alone: a joiner and inviters exchanging datagrams in memory.
@Suite("Pairing with a short code")
struct PairingTests {
    static let inviterAt = Endpoint(host: "10.0.0.1", port: 7000)!
    static let joinerAt = Endpoint(host: "10.0.0.2", port: 7000)!
    static let group = GroupIdentity(name: "home", key: GroupKey(bytes: Array(repeating: 4, count: 32), epoch: 7)!)
    static let newcomer = DeviceIdentity(rawRepresentation: Array(repeating: 9, count: 32))!

    struct Run {
        var inviter = Pairing()
        var joiner = Pairing()
        var now = LocalTime(ns: 5_000_000_000)
        var admitted: [(MemberKey, String)] = []
        var joined: GroupIdentity?
        var failed: String?
        var inviteOpen = false
        var refusals: [String] = []
        /// Datagrams from the joiner that never arrive (a lossy link), by index.
        var dropJoiner: Set<Int> = []
        var joinerSent = 0

        mutating func carry(_ directives: [Pairing.Directive], fromJoiner: Bool) {
            for d in directives {
                switch d {
                case .send(let m, _):
                    // Every datagram goes through its bytes, as on the wire.
                    let bytes = m.encoded()
                    guard let decoded = try? PairingMessage.decode(bytes) else { Issue.record("\(m) does not decode"); continue }
                    if fromJoiner {
                        joinerSent += 1
                        if dropJoiner.contains(joinerSent) { continue }
                        carry(inviter.onMessage(decoded, from: PairingTests.joinerAt, group: PairingTests.group, now: now), fromJoiner: false)
                    } else {
                        carry(joiner.onMessage(decoded, from: PairingTests.inviterAt, group: GroupIdentity(name: "mine", key: .random()), now: now), fromJoiner: true)
                    }
                case .admit(let key, let name): admitted.append((key, name))
                case .joined(let g): joined = g
                case .joinFailed(let reason): failed = reason
                case .inviteOpen(let open): inviteOpen = open
                case .refused(let counter, _): refusals.append(counter)
                }
            }
        }

        mutating func invite(_ code: String, uses: Int = 1) {
            carry(inviter.onInvite(code: code, uses: uses, now: now), fromJoiner: false)
        }

        mutating func join(_ code: String, session: UInt64 = 100) {
            carry(joiner.onJoin(code: code, groupName: nil, me: PairingTests.newcomer.member, name: "tv", session: session, now: now), fromJoiner: true)
            carry(joiner.onCandidates([PairingTests.inviterAt], now: now), fromJoiner: true)
        }

        mutating func wait(_ span: TimeSpan) {
            let end = now + span
            while now < end {
                now = now + .milliseconds(100)
                carry(joiner.onTick(now: now), fromJoiner: true)
                carry(inviter.onTick(now: now), fromJoiner: false)
            }
        }
    }

    @Test("the same code on both sides: the joiner gets the group (id, epoch, key, name) and the inviter admits its device key and name")
    func pairs() {
        var r = Run()
        r.invite("12345678")
        #expect(r.inviteOpen)
        r.join("1234-5678")
        #expect(r.joined?.id == Self.group.id)
        #expect(r.joined?.currentKey == Self.group.currentKey)
        #expect(r.joined?.name == "home")
        #expect(r.admitted.count == 1)
        #expect(r.admitted.first?.0 == Self.newcomer.member)
        #expect(r.admitted.first?.1 == "tv")
        // One use: the invite is closed now.
        #expect(!r.inviteOpen)
        #expect(r.inviter.invite == nil)
    }

    @Test("a wrong code gets nothing: no group, no admission, and the joiner says the code matches no inviting device")
    func wrongCode() {
        var r = Run()
        r.invite("12345678")
        r.join("12345679")
        #expect(r.joined == nil)
        #expect(r.admitted.isEmpty)
        // The only inviting device answered with another code: no need to wait.
        #expect(r.failed?.contains("matches no inviting device") == true)
        #expect(r.joined == nil)
    }

    @Test("every exchange spends one attempt, finished or not: after uses + 5 guesses the invite closes, and the right code then gets nothing")
    func guessesAreBounded() {
        var r = Run()
        r.invite("12345678")
        for guess in 0..<6 {
            var j = Pairing()
            let out = j.onJoin(code: String(format: "%08d", guess), groupName: nil, me: Self.newcomer.member, name: "x", session: UInt64(1000 + guess), now: r.now)
            #expect(out.isEmpty)
            for case .send(let m, _) in j.onCandidates([Self.joinerAt], now: r.now) {
                r.carry(r.inviter.onMessage(m, from: Self.joinerAt, group: Self.group, now: r.now), fromJoiner: false)
            }
        }
        #expect(r.inviter.invite == nil)
        #expect(!r.inviteOpen)
        r.join("12345678", session: 5000)
        #expect(r.joined == nil)
        #expect(r.refusals.contains("pairing_no_invite"))
    }

    @Test("a code used once is refused to the next device")
    func oneTime() {
        var r = Run()
        r.invite("24681357")
        r.join("24681357")
        #expect(r.joined != nil)
        var second = Run()
        second.inviter = r.inviter
        second.join("24681357", session: 900)
        #expect(second.joined == nil)
        #expect(second.admitted.isEmpty)
    }

    @Test("an invite for three devices admits three, then closes")
    func severalUses() {
        var r = Run()
        r.invite("11112222", uses: 3)
        for i in 0..<3 {
            var one = Run()
            one.inviter = r.inviter
            one.join("11112222", session: UInt64(10 * (i + 1)))
            #expect(one.joined != nil)
            r.inviter = one.inviter
        }
        #expect(r.inviter.invite == nil)
    }

    @Test("an expired invite answers no invite")
    func expires() {
        var r = Run()
        r.invite("12345678")
        r.wait(.seconds(601))
        #expect(!r.inviteOpen)
        r.join("12345678")
        #expect(r.joined == nil)
        #expect(r.refusals.contains("pairing_no_invite"))
    }

    @Test("lost datagrams are sent again; a start sent twice spends one attempt")
    func retransmits() {
        var r = Run()
        r.invite("12345678")
        r.dropJoiner = [1, 2]  // the first start and its first repeat are lost
        r.join("12345678")
        #expect(r.joined == nil)
        r.wait(.seconds(1))
        #expect(r.joined?.id == Self.group.id)
        #expect(r.admitted.count == 1)
    }

    @Test("a code is 8 digits: anything else is refused at once with a clear reason")
    func codeFormat() {
        #expect(Pairing.normalize("1234-5678") == "12345678")
        #expect(Pairing.normalize("1234 5678") == "12345678")
        #expect(Pairing.normalize("1234567") == nil)
        #expect(Pairing.normalize("1234567a") == nil)
        #expect(Pairing.normalize("١٢٣٤٥٦٧٨") == nil)
        var p = Pairing()
        #expect(p.onJoin(code: "abc", groupName: nil, me: Self.newcomer.member, name: "x", session: 1, now: LocalTime(ns: 0)) == [.joinFailed("a pairing code is 8 digits, such as 1234-5678")])
        #expect(Pairing.newCode().count == 8)
    }

    @Test("pairing datagrams decode exactly: truncated, padded wrong, unknown type or version are errors, never traps")
    func decoding() throws {
        let start = PairingMessage.start(session: 7, spake: Array(repeating: 1, count: 32))
        #expect(start.encoded().count == PairingMessage.startBytes)
        #expect(try PairingMessage.decode(start.encoded()) == start)
        var bytes = start.encoded()
        bytes.removeLast()
        #expect(throws: DecodeError.self) { _ = try PairingMessage.decode(bytes) }
        var wrongVersion = start.encoded()
        wrongVersion[2] = 9
        #expect(throws: DecodeError.self) { _ = try PairingMessage.decode(wrongVersion) }
        #expect(throws: DecodeError.self) { _ = try PairingMessage.decode([0x4C, 0x50, 1, 9] + [UInt8](repeating: 0, count: 8)) }
        #expect(throws: DecodeError.self) { _ = try PairingMessage.decode(PairingMessage.welcome(session: 1, sealed: [1, 2]).encoded()) }
        let refused = PairingMessage.refused(session: 3, reason: .inviteClosed)
        #expect(try PairingMessage.decode(refused.encoded()) == refused)
        // No answer is larger than the request that asks for it.
        let reply = PairingMessage.reply(session: 7, spake: Array(repeating: 2, count: 32), confirm: Array(repeating: 3, count: 32))
        #expect(reply.encoded().count < PairingMessage.startBytes)
    }
}
