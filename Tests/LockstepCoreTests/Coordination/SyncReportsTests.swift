import Testing

@testable import LockstepCore

/// Sync reports alone: who is told the players' errors, when, and for how long what others said
/// counts. A manual `now`, no network.
@Suite("Sync reports")
struct SyncReportsTests {
    static let bob = PeerID(high: 0, low: 2)
    static let carol = PeerID(high: 0, low: 3)
    static let t0 = LocalTime(ns: 10_000_000_000)
    static let errors = [SyncReport.Entry(playerID: 7, error: .microseconds(-250))]

    static func sent(_ directives: [SyncReports.Directive]) -> [PeerID: SyncReport] {
        Dictionary(uniqueKeysWithValues: directives.map { d in
            switch d { case .send(let r, let to): (to, r) }
        })
    }

    @Test("nobody watching and nobody asking: no report is sent and no deadline is set, players or not")
    func idleSendsNothing() {
        var s = SyncReports()
        #expect(s.onTick(now: Self.t0, reachable: [Self.bob, Self.carol], local: Self.errors).isEmpty)
        #expect(s.nextDeadline(now: Self.t0) == .distantFuture)
    }

    @Test("while this agent's clients watch, every reachable peer is asked at once and then every second")
    func watchingAsksEveryPeer() {
        var s = SyncReports()
        s.onWanted(true, now: Self.t0)
        #expect(s.nextDeadline(now: Self.t0) == Self.t0)
        let first = Self.sent(s.onTick(now: Self.t0, reachable: [Self.bob, Self.carol], local: []))
        #expect(first == [Self.bob: SyncReport(wantsReports: true, entries: []), Self.carol: SyncReport(wantsReports: true, entries: [])])
        #expect(s.onTick(now: Self.t0 + .milliseconds(999), reachable: [Self.bob], local: []).isEmpty)
        #expect(Self.sent(s.onTick(now: Self.t0 + .seconds(1), reachable: [Self.bob], local: Self.errors))[Self.bob]?.entries == Self.errors)
        s.onWanted(false, now: Self.t0 + .seconds(2))
        #expect(s.onTick(now: Self.t0 + .seconds(2), reachable: [Self.bob], local: Self.errors).isEmpty)
        #expect(s.nextDeadline(now: Self.t0 + .seconds(2)) == .distantFuture)
    }

    @Test("a peer's request is answered at once with this agent's errors, each second after, and no longer once it stops asking")
    func answersWhileAsked() {
        var s = SyncReports()
        s.onReport(SyncReport(wantsReports: true, entries: []), from: Self.bob, now: Self.t0)
        #expect(s.nextDeadline(now: Self.t0) == Self.t0)
        let answer = Self.sent(s.onTick(now: Self.t0, reachable: [Self.bob, Self.carol], local: Self.errors))
        #expect(answer == [Self.bob: SyncReport(wantsReports: false, entries: Self.errors)], "only the peer that asked")
        #expect(Self.sent(s.onTick(now: Self.t0 + .seconds(1), reachable: [Self.bob], local: Self.errors)).keys.contains(Self.bob))
        #expect(Self.sent(s.onTick(now: Self.t0 + .seconds(3), reachable: [Self.bob], local: Self.errors)).keys.contains(Self.bob))
        #expect(s.onTick(now: Self.t0 + .seconds(4), reachable: [Self.bob], local: Self.errors).isEmpty, "3 s after its last request")
        #expect(s.nextDeadline(now: Self.t0 + .seconds(4)) == .distantFuture)
    }

    @Test("a request is not answered while this agent has no measured player")
    func noPlayersNoAnswer() {
        var s = SyncReports()
        s.onReport(SyncReport(wantsReports: true, entries: []), from: Self.bob, now: Self.t0)
        #expect(s.onTick(now: Self.t0, reachable: [Self.bob], local: []).isEmpty)
    }

    @Test("a peer's reported errors count for 3 s, and not after it restarted or was lost")
    func receivedErrorsExpire() {
        var s = SyncReports()
        s.onReport(SyncReport(wantsReports: false, entries: Self.errors), from: Self.bob, now: Self.t0)
        #expect(s.errors(of: Self.bob, now: Self.t0 + .seconds(3)) == [7: .microseconds(-250)])
        #expect(s.errors(of: Self.bob, now: Self.t0 + .seconds(3) + .nanoseconds(1)).isEmpty)
        s.onReport(SyncReport(wantsReports: false, entries: Self.errors), from: Self.bob, now: Self.t0)
        s.onPeerGone(Self.bob)
        #expect(s.errors(of: Self.bob, now: Self.t0).isEmpty)
        #expect(s.errors(of: Self.carol, now: Self.t0).isEmpty)
    }
}
