import LockstepClient
import LockstepPlayerProtocol
import Testing

/// The coordinator's decisions, driven by a manual clock: which command the player gets, when a
/// drift correction starts and ends, when the position is reported.
@Suite("Coordinator policy")
struct CoordinatorPolicyTests {
    static let ms: Int64 = 1_000_000
    static let origin = Origin(peerID: "p1", name: "kitchen", action: .play, reason: nil, local: true, player: "tv", lamport: 1)

    static func timeline(_ state: TimelineState, at host: Int64, position: Int64 = 0, rate: Double = 1) -> TimelineEvent {
        TimelineEvent(item: "film", state: state, positionNs: position, rate: rate, hostTimeNs: host, origin: origin)
    }

    func playing(caps: PlayerCapabilities = PlayerCapabilities(rate: true, exactSeek: true), at host: Int64 = 1_000 * ms) -> CoordinatorPolicy {
        var p = CoordinatorPolicy(capabilities: caps, reportIntervalNs: 100 * Self.ms)
        _ = p.onGroupPlayback(active: true, now: 0)
        _ = p.onTimeline(Self.timeline(.playing, at: host, rate: 1.0000000556), now: host - 50 * Self.ms)
        return p
    }

    @Test("a playing timeline is a play command for its instant; a newer one makes it history")
    func timelines() {
        var p = CoordinatorPolicy(capabilities: PlayerCapabilities())
        let first = p.onTimeline(Self.timeline(.playing, at: 500 * Self.ms, position: 7 * Self.ms, rate: 1.0000000556), now: 400 * Self.ms)
        let play = PlayCommand(item: "film", itemTimeNs: 7 * Self.ms, hostTimeNs: 500 * Self.ms, rate: 1.0000000556, originator: Self.origin)
        #expect(first == [.issue(.play(play), generation: 1)])
        let second = p.onTimeline(Self.timeline(.stopped, at: 600 * Self.ms, position: 9 * Self.ms), now: 450 * Self.ms)
        #expect(second == [.issue(.pause(PauseCommand(item: "film", itemTimeNs: 9 * Self.ms, hostTimeNs: 600 * Self.ms, originator: Self.origin, stopped: true)), generation: 2)])
        #expect(!p.isLatest(1) && p.isLatest(2))
    }

    @Test("a late command is joined where the group is, at the command's rate")
    func lateJoin() {
        let play = PlayCommand(item: "film", itemTimeNs: 10 * Self.ms, hostTimeNs: 100 * Self.ms, rate: 2, originator: Self.origin)
        #expect(play.itemTime(at: 150 * Self.ms) == 110 * Self.ms)
        #expect(PauseCommand(item: "film", itemTimeNs: 10 * Self.ms, hostTimeNs: 0, originator: Self.origin).itemTime(at: .max) == 10 * Self.ms)
    }

    @Test("the position is reported once the play instant has passed, every interval, only in group playback")
    func reports() {
        var p = playing()
        #expect(p.onTick(now: 999 * Self.ms) == [])
        #expect(p.onTick(now: 1_000 * Self.ms) == [.reportPosition])
        p.onReported(now: 1_001 * Self.ms)
        #expect(p.onTick(now: 1_050 * Self.ms) == [])
        #expect(p.nextWakeUp(now: 1_050 * Self.ms) == 1_100 * Self.ms)
        #expect(p.onTick(now: 1_100 * Self.ms) == [.reportPosition])
        p.onReported(now: 1_101 * Self.ms)
        p.onSuspensions(open: 1)
        #expect(p.onTick(now: 1_300 * Self.ms) == [])
        p.onSuspensions(open: 0)
        _ = p.onGroupPlayback(active: false, now: 1_300 * Self.ms)
        #expect(p.onTick(now: 1_400 * Self.ms) == [])
        _ = p.onGroupPlayback(active: true, now: 1_400 * Self.ms)
        _ = p.onTimeline(Self.timeline(.paused, at: 1_500 * Self.ms), now: 1_400 * Self.ms)
        #expect(p.onTick(now: 1_600 * Self.ms) == [], "no reports while paused")
    }

    @Test("one reading at a time: a player that answers after the interval (it was stopped) is read again 10 ms after it answers")
    func slowReading() {
        var p = playing()
        #expect(p.onTick(now: 1_000 * Self.ms) == [.reportPosition])
        #expect(p.onTick(now: 1_100 * Self.ms) == [], "still reading")
        #expect(p.nextWakeUp(now: 1_100 * Self.ms) == 1_110 * Self.ms)
        p.onReported(now: 2_000 * Self.ms)
        #expect(p.nextWakeUp(now: 2_000 * Self.ms) == 2_010 * Self.ms)
        #expect(p.onTick(now: 2_005 * Self.ms) == [])
        #expect(p.onTick(now: 2_010 * Self.ms) == [.reportPosition])
        p.onReported(now: 2_011 * Self.ms)
        #expect(p.nextWakeUp(now: 2_011 * Self.ms) == 2_110 * Self.ms)
    }

    @Test("with nothing to report (paused, suspended, out of group playback) the coordinator does not wake; a play after a pause wakes it at its instant")
    func noWakeUpsWithNothingToDo() {
        var p = playing()
        #expect(p.onTick(now: 1_000 * Self.ms) == [.reportPosition])
        p.onReported(now: 1_001 * Self.ms)
        _ = p.onTimeline(Self.timeline(.paused, at: 1_500 * Self.ms), now: 1_400 * Self.ms)
        // The report that was due at 1 101 ms is not due any more: a wake-up "now" would spin.
        #expect(p.nextWakeUp(now: 1_600 * Self.ms) == .max)
        #expect(p.nextWakeUp(now: 9_000 * Self.ms) == .max)
        _ = p.onTimeline(Self.timeline(.playing, at: 10_000 * Self.ms), now: 9_960 * Self.ms)
        #expect(p.nextWakeUp(now: 9_960 * Self.ms) == 10_000 * Self.ms, "not before the play's instant")
        #expect(p.onTick(now: 10_000 * Self.ms) == [.reportPosition])
        p.onReported(now: 10_001 * Self.ms)
        p.onSuspensions(open: 1)
        #expect(p.nextWakeUp(now: 10_050 * Self.ms) == .max, "suspended")
        p.onSuspensions(open: 0)
        #expect(p.nextWakeUp(now: 10_050 * Self.ms) == 10_100 * Self.ms)
        _ = p.onCorrection(CorrectionEvent(kind: .rate, rate: 1.01, untilHostTimeNs: 10_080 * Self.ms, errorNs: 0), now: 10_050 * Self.ms)
        _ = p.onGroupPlayback(active: false, now: 10_060 * Self.ms)
        #expect(p.nextWakeUp(now: 10_060 * Self.ms) == .max, "out of group playback, the nudge ended with it")
    }

    @Test("a rate correction nudges a player with the rate capability and ends on time at the timeline's rate")
    func rateNudge() {
        var p = playing()
        let c = CorrectionEvent(kind: .rate, rate: 1.01, untilHostTimeNs: 1_300 * Self.ms, errorNs: -3 * Self.ms)
        #expect(p.onCorrection(c, now: 1_100 * Self.ms) == [.setRate(1.01)])
        #expect(p.nextWakeUp(now: 1_250 * Self.ms) == 1_300 * Self.ms)
        #expect(!p.onTick(now: 1_299 * Self.ms).contains(.setRate(1.0000000556)))
        #expect(p.onTick(now: 1_300 * Self.ms).contains(.setRate(1.0000000556)))
        #expect(!p.onTick(now: 1_500 * Self.ms).contains(.setRate(1.0000000556)), "ended once")
    }

    @Test("a newer rate correction supersedes the running one: one end, at the newer deadline")
    func nudgeSuperseded() {
        var p = playing()
        _ = p.onCorrection(CorrectionEvent(kind: .rate, rate: 1.01, untilHostTimeNs: 1_300 * Self.ms, errorNs: 0), now: 1_100 * Self.ms)
        #expect(p.onCorrection(CorrectionEvent(kind: .rate, rate: 0.99, untilHostTimeNs: 1_500 * Self.ms, errorNs: 0), now: 1_200 * Self.ms) == [.setRate(0.99)])
        #expect(!p.onTick(now: 1_300 * Self.ms).contains(.setRate(1.0000000556)))
        #expect(p.onTick(now: 1_500 * Self.ms).contains(.setRate(1.0000000556)))
    }

    @Test("without the rate capability, rate corrections are ignored; seeks become seek commands")
    func seekCorrection() {
        var p = playing(caps: PlayerCapabilities(exactSeek: true))
        #expect(p.onCorrection(CorrectionEvent(kind: .rate, rate: 1.01, untilHostTimeNs: 1_300 * Self.ms, errorNs: 0), now: 1_100 * Self.ms) == [])
        let d = p.onCorrection(CorrectionEvent(kind: .seek, positionNs: 400 * Self.ms, hostTimeNs: 1_400 * Self.ms, errorNs: 30 * Self.ms), now: 1_150 * Self.ms)
        guard case .issue(.seek(let seek), let generation)? = d.first else {
            Issue.record("expected a seek, got \(d)")
            return
        }
        #expect(seek.itemTimeNs == 400 * Self.ms && seek.hostTimeNs == 1_400 * Self.ms && seek.rate == 1.0000000556)
        #expect(seek.errorNs == 30 * Self.ms && seek.originator.reason == "correction")
        #expect(p.isLatest(generation))
        #expect(p.onTick(now: 1_300 * Self.ms) == [], "no report before the seek has landed")
        #expect(p.onTick(now: 1_400 * Self.ms) == [.reportPosition])
    }

    @Test("leaving group playback ends a nudge at once; corrections to a paused player are ignored")
    func nudgeEndsWithGroupPlayback() {
        var p = playing()
        _ = p.onCorrection(CorrectionEvent(kind: .rate, rate: 1.01, untilHostTimeNs: 1_300 * Self.ms, errorNs: 0), now: 1_100 * Self.ms)
        #expect(p.onGroupPlayback(active: false, now: 1_150 * Self.ms) == [.setRate(1.0000000556)])
        #expect(p.onTick(now: 1_300 * Self.ms) == [])
        _ = p.onTimeline(Self.timeline(.paused, at: 1_400 * Self.ms), now: 1_350 * Self.ms)
        #expect(p.onCorrection(CorrectionEvent(kind: .seek, positionNs: 0, hostTimeNs: 1_500 * Self.ms, errorNs: 0), now: 1_450 * Self.ms) == [])
    }

    @Test("a new timeline replaces a running nudge (the command carries its own rate)")
    func timelineEndsNudge() {
        var p = playing()
        _ = p.onCorrection(CorrectionEvent(kind: .rate, rate: 1.01, untilHostTimeNs: 1_300 * Self.ms, errorNs: 0), now: 1_100 * Self.ms)
        _ = p.onTimeline(Self.timeline(.playing, at: 1_250 * Self.ms, position: 5 * Self.ms, rate: 2), now: 1_150 * Self.ms)
        #expect(p.nudge == nil)
        #expect(p.onTick(now: 1_300 * Self.ms) == [.reportPosition])
    }
}
