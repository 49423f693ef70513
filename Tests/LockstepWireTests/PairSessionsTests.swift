import LockstepCore
import LockstepPeerWire
import Testing

/// ``PairSessions`` between two devices, through their inputs, and the envelopes sealed under
/// what they agree: both hold one fresh key per start, a restarted receiver opens nothing
/// captured before, a third member cannot open a pair's traffic, and no offer (repeated,
/// crossed, or caused by a forged incarnation) takes away the key both sides use.
@Suite("Per-pair sessions")
struct PairSessionsTests {
    static let low = DeviceIdentity(rawRepresentation: Array(repeating: 1, count: 32))!
    static let high = DeviceIdentity(rawRepresentation: Array(repeating: 2, count: 32))!
    static let groupID = Array(repeating: UInt8(7), count: 16)
    /// An incarnation an hour ahead of the real one (µs), as a malicious member forges it.
    static let forged: UInt64 = 1 + 3_600_000_000

    /// Two instances; `lo` has the lower peer id (it offers). Datagrams between them are modelled
    /// by the keys each side installed: a datagram opens if the receiver accepts the key it was
    /// sealed under (no key: the group key, which always opens).
    struct Pair {
        var lo: PairSessions
        var hi: PairSessions
        let loID: PeerID, hiID: PeerID
        let pairKey: GroupKey
        var now = LocalTime(ns: 1_000_000_000)
        var loIncarnation: UInt64 = 1, hiIncarnation: UInt64 = 1
        /// Whether answers get through to the offerer.
        var answersArrive = true
        /// Offers carried to the answerer so far.
        var offersCarried = 0

        init() {
            let (a, b) = PairSessionsTests.low.peerID < PairSessionsTests.high.peerID ? (PairSessionsTests.low, PairSessionsTests.high) : (PairSessionsTests.high, PairSessionsTests.low)
            loID = a.peerID
            hiID = b.peerID
            lo = PairSessions(me: loID)
            hi = PairSessions(me: hiID)
            pairKey = a.pairKey(with: b.member, groupID: PairSessionsTests.groupID)!
        }

        /// Delivers the pairwise messages among `directives` (and what they cause, in turn).
        mutating func carry(_ directives: [PairSessions.Directive]) {
            for case .send(let m, let to) in directives {
                switch m {
                case .sessionOffer(let e) where to == hiID:
                    offersCarried += 1
                    carry(hi.onOffer(e, from: loID, incarnation: loIncarnation, pairwise: true, pairKey: pairKey, now: now))
                case .sessionAnswer(let e, let offer) where to == loID && answersArrive:
                    carry(lo.onAnswer(e, offer: offer, from: hiID, pairwise: true, pairKey: pairKey, now: now))
                default: break
                }
            }
        }

        /// One datagram from lo to hi (`fromLow`) or back, sealed under what the sender seals
        /// under: true if the receiver opens it. One it cannot open is reported to it.
        @discardableResult
        mutating func datagram(fromLow: Bool) -> Bool {
            let key = fromLow ? lo.keys(for: hiID).seal : hi.keys(for: loID).seal
            let opens = key.map { (fromLow ? hi.keys(for: loID) : lo.keys(for: hiID)).accept.contains($0) } ?? true
            let out: [PairSessions.Directive]
            switch (fromLow, opens) {
            case (true, true): out = hi.onHeard(loID, incarnation: loIncarnation, sessionKey: key, pairKey: pairKey, now: now)
            case (true, false): out = hi.onUndecryptable(loID, pairKey: pairKey, now: now)
            case (false, true): out = lo.onHeard(hiID, incarnation: hiIncarnation, sessionKey: key, pairKey: pairKey, now: now)
            case (false, false): out = lo.onUndecryptable(hiID, pairKey: pairKey, now: now)
            }
            carry(out)
            return opens
        }

        /// Time passes by `span` in steps of 100 ms, one datagram each way per step; false if
        /// any datagram did not open.
        @discardableResult
        mutating func run(_ span: TimeSpan, reachable: Bool = true) -> Bool {
            var allOpened = true
            let end = now + span
            while now < end {
                now = now + .milliseconds(100)
                carry(lo.onTick(now: now, reachable: reachable ? [hiID] : []))
                carry(hi.onTick(now: now, reachable: reachable ? [loID] : []))
                allOpened = datagram(fromLow: true) && allOpened
                allOpened = datagram(fromLow: false) && allOpened
            }
            return allOpened
        }

        /// The first handshake, then one datagram each way: both seal under the session.
        mutating func establish() {
            carry(lo.onHeard(hiID, incarnation: hiIncarnation, sessionKey: nil, pairKey: pairKey, now: now))
            datagram(fromLow: true)
            datagram(fromLow: false)
        }
    }

    static func isOffer(_ d: PairSessions.Directive) -> Bool {
        if case .send(.sessionOffer, _) = d { true } else { false }
    }

    @Test("the lower id offers, the other answers: both hold the same fresh key; the answerer seals under it once the offerer has")
    func handshake() {
        var p = Pair()
        #expect(p.hi.onHeard(p.loID, incarnation: 1, sessionKey: nil, pairKey: p.pairKey, now: p.now).isEmpty)
        p.carry(p.lo.onHeard(p.hiID, incarnation: 1, sessionKey: nil, pairKey: p.pairKey, now: p.now))
        let key = p.lo.keys(for: p.hiID).seal
        #expect(key?.epoch == GroupKey.sessionEpoch)
        #expect(p.hi.keys(for: p.loID).accept == [key!])
        #expect(p.hi.keys(for: p.loID).seal == nil)
        let out = p.hi.onHeard(p.loID, incarnation: 1, sessionKey: key, pairKey: p.pairKey, now: p.now)
        #expect(out == [.install(p.loID, accept: [key!], seal: key!)])
    }

    @Test("every start makes a new key: the same two devices, restarted, never agree on the same key again")
    func freshPerStart() {
        var first = Pair()
        first.establish()
        var second = Pair()
        second.establish()
        #expect(first.lo.keys(for: first.hiID).seal != second.lo.keys(for: second.hiID).seal)
    }

    @Test("a peer's new incarnation makes the offerer offer again and either side seal under the group key until the peer is heard under a session; no key is dropped (a forged incarnation cuts nothing)")
    func restartRenews() {
        var p = Pair()
        p.establish()
        p.now = p.now + .seconds(1)
        let before = p.lo.keys(for: p.hiID)
        let out = p.lo.onHeard(p.hiID, incarnation: 2, sessionKey: nil, pairKey: p.pairKey, now: p.now)
        #expect(out.filter(Self.isOffer).count == 1)
        #expect(out.contains(.install(p.hiID, accept: before.accept, seal: nil)))
        #expect(p.lo.keys(for: p.hiID).accept == before.accept)
        // The answerer, told of a new incarnation of the offerer, keeps its keys and seals under the group key.
        let hiBefore = p.hi.keys(for: p.loID)
        #expect(p.hi.onHeard(p.loID, incarnation: 7, sessionKey: nil, pairKey: p.pairKey, now: p.now) == [.install(p.loID, accept: hiBefore.accept, seal: nil)])
        // Heard under the session (the incarnation was forged: the real one still holds it), both seal under it again.
        _ = p.hi.onHeard(p.loID, incarnation: 1, sessionKey: hiBefore.seal, pairKey: p.pairKey, now: p.now)
        #expect(p.hi.keys(for: p.loID) == hiBefore)
        _ = p.lo.onHeard(p.hiID, incarnation: 1, sessionKey: before.seal, pairKey: p.pairKey, now: p.now)
        #expect(p.lo.keys(for: p.hiID) == before)
    }

    @Test("offers repeated while their answers are lost (a forged incarnation shuts the real one out for 10 s) take no key away: both keep sealing under, and opening, the session they had")
    func repeatedOffersKeepWorkingKey() {
        var p = Pair()
        p.establish()
        let working = p.lo.keys(for: p.hiID).seal!
        #expect(p.hi.keys(for: p.loID).seal == working)
        // A member speaks as hi to lo, an hour ahead: lo offers again, and none of hi's answers
        // arrive (lo refused hi's real incarnation as stale, before sessions had their own
        // incarnations); lo offers every retry, hi answers each.
        p.answersArrive = false
        p.carry(p.lo.onHeard(p.hiID, incarnation: Self.forged, sessionKey: nil, pairKey: p.pairKey, now: p.now))
        var offers = 0
        for _ in 0..<100 {
            p.now = p.now + .milliseconds(100)
            let out = p.lo.onTick(now: p.now, reachable: [p.hiID])
            offers += out.filter(Self.isOffer).count
            p.carry(out)
            _ = p.hi.onTick(now: p.now, reachable: [p.loID])
        }
        #expect(offers >= 15)
        #expect(p.lo.keys(for: p.hiID).accept.contains(working))
        #expect(p.hi.keys(for: p.loID).seal == working)
        #expect(p.hi.keys(for: p.loID).accept.contains(working))
        #expect(p.hi.keys(for: p.loID).accept.count <= 1 + PairSessions.maxPending)
        // Datagrams open both ways (hi's, under the working key, with its real incarnation), and
        // lo, having heard hi under it, seals under it again.
        let ok1 = p.datagram(fromLow: false)
        #expect(ok1)
        #expect(p.lo.keys(for: p.hiID).seal == working)
        let ok2 = p.datagram(fromLow: true)
        #expect(ok2)
        // Once answers arrive again, both move to a new key without one datagram lost.
        p.answersArrive = true
        let ok3 = p.run(.seconds(2))
        #expect(ok3)
        let fresh = p.lo.keys(for: p.hiID).seal!
        #expect(fresh != working)
        #expect(p.hi.keys(for: p.loID).seal == fresh)
        let ok4 = p.run(.seconds(11))
        #expect(ok4)
        #expect(p.lo.keys(for: p.hiID).accept == [fresh])
        #expect(p.hi.keys(for: p.loID).accept == [fresh])
    }

    @Test("a forged incarnation seen by either side, datagrams flowing all the while: not one fails to open, and the offerer offers at most once a retry interval")
    func forgedIncarnationCutsNothing() {
        var p = Pair()
        p.establish()
        let before = p.offersCarried
        for step in 0..<50 {
            // Every other step a forged datagram in each direction, among the real ones.
            if step % 2 == 0 {
                p.carry(p.lo.onHeard(p.hiID, incarnation: Self.forged, sessionKey: nil, pairKey: p.pairKey, now: p.now))
                p.carry(p.hi.onHeard(p.loID, incarnation: Self.forged, sessionKey: nil, pairKey: p.pairKey, now: p.now))
            }
            let ok5 = p.run(.milliseconds(100))
            #expect(ok5)
        }
        #expect(p.offersCarried - before <= 11)
    }

    @Test("answers crossed: of two offers the answerer took in the reverse order, the key of the one answered still opens, and then seals both ways")
    func crossedOffers() {
        var p = Pair()
        p.establish()
        let working = p.lo.keys(for: p.hiID).seal!
        p.now = p.now + .seconds(1)
        let first = p.lo.onHeard(p.hiID, incarnation: 2, sessionKey: nil, pairKey: p.pairKey, now: p.now)
        p.now = p.now + .milliseconds(500)
        let second = p.lo.onTick(now: p.now, reachable: [p.hiID])
        #expect(first.filter(Self.isOffer).count == 1 && second.filter(Self.isOffer).count == 1 && first.filter(Self.isOffer) != second)
        // hi takes the second offer first; its answer to the first is dropped as a stray at lo.
        p.hiIncarnation = 2
        p.carry(second)
        p.carry(first)
        let fresh = p.lo.keys(for: p.hiID).seal!
        #expect(fresh != working)
        let ok6 = p.run(.seconds(1))
        #expect(ok6)
        #expect(p.hi.keys(for: p.loID).seal == fresh)
    }

    @Test("the offerer restarted: the answerer's datagrams under the old session do not open, so it offers, and both are on a new key within a round trip")
    func offererRestarts() {
        var p = Pair()
        p.establish()
        let old = p.hi.keys(for: p.loID).seal!
        p.lo = PairSessions(me: p.loID)
        p.loIncarnation = 2
        let ok7 = p.datagram(fromLow: false)
        #expect(!ok7)
        let fresh = p.lo.keys(for: p.hiID).seal
        #expect(fresh != nil && fresh != old)
        let ok8 = p.datagram(fromLow: true)
        #expect(ok8)
        #expect(p.hi.keys(for: p.loID).seal == fresh)
        let ok9 = p.run(.seconds(1))
        #expect(ok9)
    }

    @Test("the answerer restarted: the offerer hears its new incarnation under the group key and offers; nothing of the old session opens at the answerer")
    func answererRestarts() {
        var p = Pair()
        p.establish()
        let old = p.lo.keys(for: p.hiID).seal!
        p.now = p.now + .seconds(1)
        p.hi = PairSessions(me: p.hiID)
        p.hiIncarnation = 2
        #expect(!p.hi.keys(for: p.loID).accept.contains(old))
        let oldSessionOpens = p.datagram(fromLow: true)  // lo still seals under the old session
        #expect(!oldSessionOpens)
        let groupKeyOpens = p.datagram(fromLow: false)  // hi has none: the group key; lo offers
        #expect(groupKeyOpens)
        #expect(p.lo.keys(for: p.hiID).seal != old)
        let ok10 = p.run(.seconds(1))
        #expect(ok10)
        #expect(p.hi.keys(for: p.loID).seal == p.lo.keys(for: p.hiID).seal)
    }

    @Test("a new key the answerer never seals under (its pending key lost) is offered again after the confirmation timeout")
    func unconfirmedKeyIsOfferedAgain() {
        var p = Pair()
        p.establish()
        let working = p.lo.keys(for: p.hiID).seal!
        p.now = p.now + .seconds(1)
        // lo's offer reaches hi, but hi loses the key (as if restarted), keeping only what it sealed under.
        p.carry(p.lo.onHeard(p.hiID, incarnation: 2, sessionKey: nil, pairKey: p.pairKey, now: p.now))
        let lost = p.lo.keys(for: p.hiID).seal!
        #expect(lost != working)
        p.hi = PairSessions(me: p.hiID)
        p.hiIncarnation = 2
        // hi's datagrams (group key) keep coming, lo's do not open: within the timeout lo offers again.
        p.run(PairSessions.Configuration().confirmTimeout + .seconds(1))
        #expect(p.lo.keys(for: p.hiID).seal != lost)
        let ok11 = p.run(.seconds(1))
        #expect(ok11)
    }

    @Test("an answerer silent for 30 s is offered nothing more, and its first datagram, under the key it took up, opens")
    func silentAnswererIsLeftAlone() {
        var p = Pair()
        p.carry(p.lo.onHeard(p.hiID, incarnation: 1, sessionKey: nil, pairKey: p.pairKey, now: p.now))
        // One datagram from lo: hi takes the new key up and seals under it. Then neither says anything.
        p.datagram(fromLow: true)
        for _ in 0..<300 {
            p.now = p.now + .milliseconds(100)
            p.carry(p.lo.onTick(now: p.now, reachable: [p.hiID]))
            p.carry(p.hi.onTick(now: p.now, reachable: [p.loID]))
            #expect((p.lo.nextDeadline ?? .distantFuture) > p.now)
        }
        #expect(p.offersCarried == 1, "no offer to a peer that has shown nothing")
        let opens = p.datagram(fromLow: false)
        #expect(opens, "hi's key is still lo's")
        let flowing = p.run(.seconds(1))
        #expect(flowing)
    }

    @Test("after a tick, no deadline is left in the past: an offer to a peer out of reach waits, renewals are the offerer's alone")
    func deadlinesMove() {
        var p = Pair()
        _ = p.lo.onHeard(p.hiID, incarnation: 1, sessionKey: nil, pairKey: p.pairKey, now: p.now)  // offer lost
        for _ in 0..<5 {
            p.now = p.now + .seconds(1)
            #expect(p.lo.onTick(now: p.now, reachable: []).isEmpty)
            #expect((p.lo.nextDeadline ?? .distantFuture) > p.now)
        }
        var q = Pair()
        q.establish()
        q.now = q.now + .seconds(500)
        _ = q.hi.onTick(now: q.now, reachable: [q.loID])
        #expect(q.hi.nextDeadline == nil)
    }

    @Test("an answer to an offer this device did not make, or not sealed pairwise, is ignored; so is an offer not sealed pairwise")
    func strayAnswers() {
        var p = Pair()
        let e = Array(repeating: UInt8(9), count: 32)
        #expect(p.lo.onAnswer(e, offer: e, from: p.hiID, pairwise: true, pairKey: p.pairKey, now: p.now).isEmpty)
        _ = p.lo.onHeard(p.hiID, incarnation: 1, sessionKey: nil, pairKey: p.pairKey, now: p.now)
        #expect(p.lo.onAnswer(e, offer: e, from: p.hiID, pairwise: false, pairKey: p.pairKey, now: p.now).isEmpty)
        #expect(p.hi.onOffer(e, from: p.loID, incarnation: 1, pairwise: false, pairKey: p.pairKey, now: p.now).isEmpty)
    }

    @Test("after the rekey interval the offerer offers again; the replaced key is opened until the peer uses the new one and 10 s more, then dropped")
    func rekey() {
        var p = Pair()
        p.establish()
        let old = p.lo.keys(for: p.hiID).seal!
        p.now = p.now + .seconds(121)
        let offers = p.lo.onTick(now: p.now, reachable: [p.hiID])
        #expect(offers.contains(where: Self.isOffer))
        p.carry(offers)
        let fresh = p.lo.keys(for: p.hiID)
        #expect(fresh.seal != old)
        #expect(fresh.accept.count == 2 && fresh.accept.contains(fresh.seal!) && fresh.accept.contains(old))
        let toHi = p.datagram(fromLow: true), toLo = p.datagram(fromLow: false)
        #expect(toHi && toLo)
        p.now = p.now + .seconds(11)
        _ = p.lo.onTick(now: p.now, reachable: [p.hiID])
        _ = p.hi.onTick(now: p.now, reachable: [p.loID])
        #expect(p.lo.keys(for: p.hiID).accept == [fresh.seal!])
        #expect(p.hi.keys(for: p.loID).accept == [fresh.seal!])
    }

    @Test("a group switch ends every session and offer")
    func reset() {
        var p = Pair()
        p.establish()
        #expect(p.lo.onReset() == [.install(p.hiID, accept: [], seal: nil)])
        #expect(p.lo.peersWithSessions.isEmpty && p.lo.nextDeadline == nil)
    }

    @Test("sealed under a session: the peer opens it and learns which key opened it; a receiver that restarted (no session), or a third member, does not")
    func envelopes() throws {
        var p = Pair()
        p.establish()
        let key = p.lo.keys(for: p.hiID).seal!
        let group = GroupKey(bytes: Array(repeating: 3, count: 32), epoch: 1)!
        let datagram = EnvelopeSealer(sender: p.loID, incarnation: 5, key: group).seal([1, 2, 3], with: key)
        let receiver = EnvelopeOpener(me: p.hiID, keys: [])
        receiver.acceptSession([GroupKey(bytes: Array(repeating: 4, count: 32), epoch: GroupKey.sessionEpoch)!] + p.hi.keys(for: p.loID).accept, from: p.loID)
        let opened = try receiver.open(datagram)
        #expect(opened.plaintext == [1, 2, 3])
        #expect(opened.header.sessionKey == key)
        let restarted = EnvelopeOpener(me: p.hiID, keys: [group])
        #expect(throws: Envelope.Rejection.unknownKeyEpoch) { try restarted.open(datagram) }
        let third = EnvelopeOpener(me: PeerID(high: 9, low: 9), keys: [group])
        third.acceptSession([GroupKey(bytes: Array(repeating: 4, count: 32), epoch: GroupKey.sessionEpoch)!], from: p.loID)
        #expect(throws: Envelope.Rejection.authenticationFailed) { try third.open(datagram) }
    }

    @Test("a member forging a peer's id under the group key, an incarnation ahead, shuts out none of that peer's session-sealed or pairwise datagrams (only its group-key ones, for 10 s)")
    func forgedIncarnationLeavesSessionsOpen() throws {
        var p = Pair()
        p.establish()
        let session = p.hi.keys(for: p.loID).seal!
        let group = GroupKey(bytes: Array(repeating: 3, count: 32), epoch: 1)!
        let receiver = EnvelopeOpener(me: p.loID, keys: [group])
        receiver.acceptSession(p.lo.keys(for: p.hiID).accept, from: p.hiID)
        receiver.acceptPairs([p.hiID: p.pairKey])
        let real = EnvelopeSealer(sender: p.hiID, incarnation: 1, key: group)
        _ = try receiver.open(real.seal([1], with: session), hostNow: 1_000_000_000)
        _ = try receiver.open(EnvelopeSealer(sender: p.hiID, incarnation: Self.forged, key: group).seal([2]), hostNow: 1_100_000_000)
        #expect(throws: Envelope.Rejection.staleIncarnation) { try receiver.open(real.seal([3]), hostNow: 1_200_000_000) }
        #expect(try receiver.open(real.seal([4], with: session), hostNow: 1_300_000_000).header.sessionKey == session)
        #expect(try receiver.open(real.seal([5], with: p.pairKey), hostNow: 1_400_000_000).plaintext == [5])
        // Their replays are still refused.
        let again = real.seal([6], with: session)
        _ = try receiver.open(again, hostNow: 1_500_000_000)
        #expect(throws: Envelope.Rejection.replayed) { try receiver.open(again, hostNow: 1_600_000_000) }
    }
}
