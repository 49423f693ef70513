import LockstepCore
import LockstepPeerWire
import Testing

/// ``PairSessions`` between two devices, through their inputs, and the envelopes sealed under
/// what they agree: both hold one fresh key per start, a restarted receiver opens nothing
/// captured before, and a third member cannot open a pair's traffic.
@Suite("Per-pair sessions")
struct PairSessionsTests {
    static let low = DeviceIdentity(rawRepresentation: Array(repeating: 1, count: 32))!
    static let high = DeviceIdentity(rawRepresentation: Array(repeating: 2, count: 32))!
    static let groupID = Array(repeating: UInt8(7), count: 16)

    /// Two instances; `lo` has the lower peer id (it offers).
    struct Pair {
        var lo: PairSessions
        var hi: PairSessions
        let loID: PeerID, hiID: PeerID
        let pairKey: GroupKey
        var now = LocalTime(ns: 1_000_000_000)

        init() {
            let (a, b) = PairSessionsTests.low.peerID < PairSessionsTests.high.peerID ? (PairSessionsTests.low, PairSessionsTests.high) : (PairSessionsTests.high, PairSessionsTests.low)
            loID = a.peerID
            hiID = b.peerID
            lo = PairSessions(me: loID)
            hi = PairSessions(me: hiID)
            pairKey = a.pairKey(with: b.member, groupID: PairSessionsTests.groupID)!
        }

        /// Delivers `from`'s directives to the other side (messages only).
        mutating func carry(_ directives: [PairSessions.Directive], fromLow: Bool, incarnation: UInt64 = 1) {
            for case .send(let m, _) in directives {
                switch m {
                case .sessionOffer(let e):
                    let out = hi.onOffer(e, from: loID, incarnation: incarnation, pairwise: true, pairKey: pairKey, now: now)
                    carry(out, fromLow: false, incarnation: incarnation)
                case .sessionAnswer(let e, let offer):
                    _ = lo.onAnswer(e, offer: offer, from: hiID, pairwise: true, pairKey: pairKey, now: now)
                default: break
                }
            }
        }

        mutating func handshake(incarnation: UInt64 = 1) {
            carry(lo.onHeard(hiID, incarnation: incarnation, underSession: false, pairKey: pairKey, now: now), fromLow: true, incarnation: incarnation)
        }
    }

    @Test("the lower id offers, the other answers: both hold the same fresh key; the answerer seals under it once the offerer has")
    func handshake() {
        var p = Pair()
        #expect(p.hi.onHeard(p.loID, incarnation: 1, underSession: false, pairKey: p.pairKey, now: p.now).isEmpty)
        p.handshake()
        let loKeys = p.lo.keys(for: p.hiID), hiKeys = p.hi.keys(for: p.loID)
        #expect(loKeys.seal != nil)
        #expect(loKeys.accept.first == hiKeys.accept.first)
        #expect(hiKeys.seal == nil)
        let out = p.hi.onHeard(p.loID, incarnation: 1, underSession: true, pairKey: p.pairKey, now: p.now)
        #expect(out == [.install(p.loID, accept: [loKeys.seal!], seal: loKeys.seal!)])
        #expect(loKeys.seal?.epoch == GroupKey.sessionEpoch)
    }

    @Test("every start makes a new key: the same two devices, restarted, never agree on the same key again")
    func freshPerStart() {
        var first = Pair()
        first.handshake()
        var second = Pair()
        second.handshake()
        #expect(first.lo.keys(for: first.hiID).seal != second.lo.keys(for: second.hiID).seal)
    }

    @Test("a peer's new incarnation makes the offerer offer again; the session in place stays until replaced (a forged incarnation cuts nothing)")
    func restartRenews() {
        var p = Pair()
        p.handshake()
        let before = p.lo.keys(for: p.hiID)
        let out = p.lo.onHeard(p.hiID, incarnation: 2, underSession: false, pairKey: p.pairKey, now: p.now)
        #expect(out.count == 1)
        #expect(out.contains { if case .send(.sessionOffer, _) = $0 { true } else { false } })
        #expect(p.lo.keys(for: p.hiID).seal == before.seal)
        // The answerer, told of a new incarnation of the offerer, keeps its session too.
        let hiBefore = p.hi.keys(for: p.loID)
        #expect(p.hi.onHeard(p.loID, incarnation: 7, underSession: false, pairKey: p.pairKey, now: p.now).isEmpty)
        #expect(p.hi.keys(for: p.loID).accept == hiBefore.accept)
    }

    @Test("after a tick, no deadline is left in the past: an offer to a peer out of reach waits, renewals are the offerer's alone")
    func deadlinesMove() {
        var p = Pair()
        _ = p.lo.onHeard(p.hiID, incarnation: 1, underSession: false, pairKey: p.pairKey, now: p.now)  // offer lost
        for _ in 0..<5 {
            p.now = p.now + .seconds(1)
            #expect(p.lo.onTick(now: p.now, reachable: []).isEmpty)
            #expect((p.lo.nextDeadline ?? .distantFuture) > p.now)
        }
        var q = Pair()
        q.handshake()
        q.now = q.now + .seconds(500)
        _ = q.hi.onTick(now: q.now, reachable: [q.loID])
        #expect(q.hi.nextDeadline == nil)
    }

    @Test("an answer to an offer this device did not make, or not sealed pairwise, is ignored")
    func strayAnswers() {
        var p = Pair()
        let e = Array(repeating: UInt8(9), count: 32)
        #expect(p.lo.onAnswer(e, offer: e, from: p.hiID, pairwise: true, pairKey: p.pairKey, now: p.now).isEmpty)
        _ = p.lo.onHeard(p.hiID, incarnation: 1, underSession: false, pairKey: p.pairKey, now: p.now)
        #expect(p.lo.onAnswer(e, offer: e, from: p.hiID, pairwise: false, pairKey: p.pairKey, now: p.now).isEmpty)
        #expect(p.hi.onOffer(e, from: p.loID, incarnation: 1, pairwise: false, pairKey: p.pairKey, now: p.now).isEmpty)
    }

    @Test("after the rekey interval the offerer offers again; the replaced key is still accepted for its life, then dropped")
    func rekey() {
        var p = Pair()
        p.handshake()
        let old = p.lo.keys(for: p.hiID).seal!
        p.now = p.now + .seconds(121)
        let offers = p.lo.onTick(now: p.now, reachable: [p.hiID])
        #expect(offers.contains { if case .send(.sessionOffer, _) = $0 { true } else { false } })
        p.carry(offers, fromLow: true)
        let fresh = p.lo.keys(for: p.hiID)
        #expect(fresh.seal != old)
        #expect(fresh.accept == [fresh.seal!, old])
        p.now = p.now + .seconds(11)
        _ = p.lo.onTick(now: p.now, reachable: [p.hiID])
        #expect(p.lo.keys(for: p.hiID).accept == [fresh.seal!])
    }

    @Test("sealed under a session: the peer opens it; a receiver that restarted (no session), or a third member, does not")
    func envelopes() throws {
        var p = Pair()
        p.handshake()
        let key = p.lo.keys(for: p.hiID).seal!
        let datagram = EnvelopeSealer(sender: p.loID, incarnation: 5, key: GroupKey(bytes: Array(repeating: 3, count: 32), epoch: 1)!).seal([1, 2, 3], with: key)
        let receiver = EnvelopeOpener(me: p.hiID, keys: [])
        receiver.acceptSession(p.hi.keys(for: p.loID).accept, from: p.loID)
        #expect(try receiver.open(datagram).plaintext == [1, 2, 3])
        let restarted = EnvelopeOpener(me: p.hiID, keys: [GroupKey(bytes: Array(repeating: 3, count: 32), epoch: 1)!])
        #expect(throws: Envelope.Rejection.unknownKeyEpoch) { try restarted.open(datagram) }
        let third = EnvelopeOpener(me: PeerID(high: 9, low: 9), keys: [GroupKey(bytes: Array(repeating: 3, count: 32), epoch: 1)!])
        third.acceptSession([GroupKey(bytes: Array(repeating: 4, count: 32), epoch: GroupKey.sessionEpoch)!], from: p.loID)
        #expect(throws: Envelope.Rejection.authenticationFailed) { try third.open(datagram) }
    }
}
