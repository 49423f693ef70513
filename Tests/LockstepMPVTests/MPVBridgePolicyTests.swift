import LockstepClient
import LockstepCore
import LockstepMPV
import LockstepPlayerProtocol
import Testing

/// The bridge's decisions, with time as an argument: who changed mpv (the user or the bridge),
/// and how the coordinator's commands become mpv actions at the right instants.
@Suite("mpv bridge policy")
struct MPVBridgePolicyTests {
    typealias P = MPVBridgePolicy
    static let ms = Nanos.millisecond
    static let file = "/media/film.mkv"

    func origin(_ action: Origin.Action, local: Bool = false, reason: String? = nil) -> Origin {
        Origin(peerID: "p2", name: "kitchen", action: action, reason: reason, local: local, lamport: 3)
    }

    /// The coordinator's command for a timeline of the group.
    func timeline(_ state: TimelineState, position: Int64, at: Int64, rate: Double = 1, action: Origin.Action = .play, local: Bool = false) -> P.Input {
        let o = origin(action, local: local)
        guard state == .playing else { return .command(.pause(PauseCommand(item: Self.file, itemTimeNs: position, hostTimeNs: at, originator: o, stopped: state == .stopped))) }
        return .command(.play(PlayCommand(item: Self.file, itemTimeNs: position, hostTimeNs: at, rate: rate, originator: o)))
    }

    /// A policy with a file loaded, mpv paused at speed 1, the group paused at 0.
    func loaded(_ configuration: P.Configuration = .init(), now: Int64 = 0) -> P {
        var p = P(configuration: configuration)
        _ = p.handle(.pause(true), now: now)
        _ = p.handle(.speed(1), now: now)
        _ = p.handle(.pausedForCache(false), now: now)
        _ = p.handle(.fileLoaded(path: Self.file, durationNs: 600 * Nanos.second, title: "film"), now: now)
        _ = p.handle(timeline(.paused, position: 0, at: now, action: .load, local: true), now: now)
        // mpv carries out the bridge's seek to the group's position.
        _ = p.handle(.seekStarted, now: now)
        _ = p.handle(.playbackRestarted(positionNs: 0), now: now)
        return p
    }

    /// A policy playing on the group timeline from position 10 s at host time 1 s.
    func playing() -> P {
        var p = loaded()
        _ = p.handle(timeline(.playing, position: 10 * Nanos.second, at: Nanos.second, local: true), now: 500 * Self.ms)
        _ = p.handle(.tick, now: Nanos.second)
        _ = p.handle(.pause(false), now: Nanos.second)
        _ = p.handle(.seekStarted, now: Nanos.second)
        _ = p.handle(.playbackRestarted(positionNs: 10 * Nanos.second), now: Nanos.second)
        return p
    }

    @Test("a loaded file is loaded on the agent under its path, or the custom id given for it, and declared ready")
    func loadsItem() {
        var p = P()
        #expect(p.handle(.fileLoaded(path: Self.file, durationNs: 5, title: "film"), now: 0) == [
            .load(LoadRequest(item: Self.file, share: .group, title: "film", durationNs: 5)), .ready,
        ])
        var c = P.Configuration()
        c.itemIDs = [Self.file: "night-2019"]
        var q = P(configuration: c)
        #expect(q.handle(.fileLoaded(path: Self.file, durationNs: nil, title: nil), now: 0).first == .load(LoadRequest(item: "night-2019", share: .group)))
        #expect(q.item == "night-2019")
    }

    @Test("the user's play becomes an intent and mpv is paused again until the group's anchor")
    func userPlayIsRevertedUntilAnchor() {
        var p = loaded()
        #expect(p.handle(.pause(false), now: 100 * Self.ms) == [.setPause(true), .intent(IntentRequest(action: .play))])
        // The bridge's own re-pause is not another intent.
        #expect(p.handle(.pause(true), now: 101 * Self.ms) == [])
    }

    @Test("a playing timeline: paused and sought exactly at once, unpaused at the anchor's host time, not before")
    func startAtAnchor() {
        var p = loaded()
        let actions = p.handle(timeline(.playing, position: 30 * Nanos.second, at: 400 * Self.ms), now: 100 * Self.ms)
        #expect(actions.contains(.seek(positionNs: 30 * Nanos.second)))
        #expect(!actions.contains(.setPause(false)))
        #expect(p.nextDeadline == 400 * Self.ms)
        #expect(p.handle(.tick, now: 400 * Self.ms - 1) == [])
        #expect(p.handle(.tick, now: 400 * Self.ms) == [.setPause(false)])
        // mpv reports the unpause the bridge made: not the user's.
        #expect(p.handle(.pause(false), now: 401 * Self.ms) == [])
        #expect(p.nextDeadline == nil)
    }

    @Test("an anchor closer than the minimum lead moves that much later, to where the timeline is then")
    func lateAnchorJoinsWhereTheGroupIs() {
        var c = P.Configuration()
        c.minimumLeadNs = 100 * Self.ms
        var p = loaded(c)
        let actions = p.handle(timeline(.playing, position: 30 * Nanos.second, at: 50 * Self.ms, rate: 2), now: 40 * Self.ms)
        // Start at 140 ms instead of 50 ms: 90 ms later at rate 2 is 180 ms further.
        #expect(actions.contains(.seek(positionNs: 30 * Nanos.second + 180 * Self.ms)))
        #expect(actions.contains(.setSpeed(2)))
        #expect(p.nextDeadline == 140 * Self.ms)
    }

    @Test("a playing mpv that would be within the tolerance at the anchor keeps playing, one too far off stops and seeks")
    func keepsPlayingWhenClose() {
        var p = playing()
        // At 2 s mpv reads 11.000 s (on the timeline). A re-sent timeline: position at 2.5 s = 11.5 s.
        _ = p.handle(.position(11 * Nanos.second, at: 2 * Nanos.second), now: 2 * Nanos.second)
        #expect(p.handle(timeline(.playing, position: 11_500 * Self.ms + 10 * Self.ms, at: 2_500 * Self.ms), now: 2_010 * Self.ms) == [.showText("kitchen played")])
        #expect(p.nextDeadline == nil)
        // 50 ms off: pause, exact seek, unpause at the anchor.
        let actions = p.handle(timeline(.playing, position: 11_550 * Self.ms, at: 2_500 * Self.ms, local: true), now: 2_020 * Self.ms)
        #expect(actions == [.setPause(true), .seek(positionNs: 11_550 * Self.ms)])
        #expect(p.nextDeadline == 2_500 * Self.ms)
    }

    @Test("the user's pause becomes an intent and mpv plays on; it pauses with the group at the group's instant")
    func userPauseThenGroupPause() {
        var p = playing()
        #expect(p.handle(.pause(true), now: 3 * Nanos.second) == [.intent(IntentRequest(action: .pause)), .setPause(false)])
        #expect(p.handle(.pause(false), now: 3_001 * Self.ms) == [])
        _ = p.handle(.position(11_998 * Self.ms, at: 3_000 * Self.ms), now: 3_002 * Self.ms)  // from before the pause
        _ = p.handle(.position(12_000 * Self.ms, at: 3_002 * Self.ms), now: 3_002 * Self.ms)
        #expect(p.reports(readingAt: 3_002 * Self.ms, now: 3_002 * Self.ms))
        #expect(p.handle(timeline(.paused, position: 12_050 * Self.ms, at: 3_050 * Self.ms, action: .pause, local: true), now: 3_003 * Self.ms) == [])
        // 3 ms lost while it was paused: it pauses 3 ms late, when it reaches the group's position, with no seek.
        #expect(p.handle(.tick, now: 3_050 * Self.ms) == [])
        #expect(p.nextDeadline == 3_052 * Self.ms)
        #expect(p.handle(.tick, now: 3_052 * Self.ms) == [.setPause(true)])
    }

    @Test("another peer's pause: mpv plays on until the instant, then pauses and seeks exactly; the OSD names the peer")
    func remotePause() {
        var p = playing()
        _ = p.handle(.position(11_930 * Self.ms, at: 2_900 * Self.ms), now: 2_900 * Self.ms)  // 30 ms ahead
        #expect(p.handle(timeline(.paused, position: 12 * Nanos.second, at: 3 * Nanos.second, action: .pause), now: 2_900 * Self.ms) == [.showText("kitchen paused")])
        #expect(p.handle(.tick, now: 3 * Nanos.second) == [.setPause(true), .seek(positionNs: 12 * Nanos.second)])
        #expect(p.handle(.pause(true), now: 3_001 * Self.ms) == [])
        #expect(p.handle(.seekStarted, now: 3_001 * Self.ms) == [])
        #expect(p.handle(.playbackRestarted(positionNs: 12 * Nanos.second), now: 3_010 * Self.ms) == [])
    }

    @Test("the user's seek becomes an intent with where mpv landed; the bridge's own seeks do not")
    func userSeek() {
        var p = playing()
        #expect(p.handle(.seekStarted, now: 5 * Nanos.second) == [])
        #expect(p.handle(.playbackRestarted(positionNs: 120 * Nanos.second), now: 5_050 * Self.ms) == [.intent(IntentRequest(action: .seek, positionNs: 120 * Nanos.second))])
        // The group's seek: the bridge seeks; mpv's seek events are its own.
        _ = p.handle(timeline(.playing, position: 120 * Nanos.second, at: 5_300 * Self.ms, action: .seek, local: true), now: 5_060 * Self.ms)
        #expect(p.handle(.seekStarted, now: 5_061 * Self.ms) == [])
        #expect(p.handle(.playbackRestarted(positionNs: 120 * Nanos.second), now: 5_080 * Self.ms) == [])
    }

    @Test("the user's speed change becomes a rate intent and is undone until the group's timeline sets it")
    func userSpeed() {
        var p = playing()
        #expect(p.handle(.speed(1.5), now: 5 * Nanos.second) == [.intent(IntentRequest(action: .rate, rate: 1.5)), .setSpeed(1)])
        #expect(p.handle(.speed(1), now: 5_001 * Self.ms) == [])
        let actions = p.handle(timeline(.playing, position: 14 * Nanos.second, at: 5_200 * Self.ms, rate: 1.5, action: .rate, local: true), now: 5_010 * Self.ms)
        #expect(actions.first == .setSpeed(1.5))
        #expect(p.handle(.speed(1.5), now: 5_011 * Self.ms) == [])
    }

    @Test("a rate correction sets speed, its end the group's rate again; neither is an intent, and no position is reported while it runs nor until the change has gone through mpv's audio buffer")
    func rateCorrection() {
        var p = playing()
        #expect(p.handle(.rate(0.99), now: 5 * Nanos.second) == [.setSpeed(0.99)])
        #expect(p.handle(.speed(0.99), now: 5_001 * Self.ms) == [])
        _ = p.handle(.position(14_500 * Self.ms, at: 5_200 * Self.ms), now: 5_200 * Self.ms)
        #expect(!p.reports(readingAt: 5_200 * Self.ms, now: 5_200 * Self.ms))
        #expect(!p.reports(readingAt: 5_900 * Self.ms, now: 5_900 * Self.ms))
        #expect(p.nextDeadline == nil)
        #expect(p.handle(.rate(1), now: 6 * Nanos.second) == [.setSpeed(1)])
        #expect(p.handle(.speed(1), now: 6_001 * Self.ms) == [])
        #expect(!p.reports(readingAt: 6_200 * Self.ms, now: 6_200 * Self.ms))
        #expect(p.reports(readingAt: 6_300 * Self.ms, now: 6_300 * Self.ms))
    }

    @Test("a seek correction: pause, exact seek, resume at the instant given; none during a start")
    func seekCorrection() {
        var p = playing()
        let c = SeekCommand(item: Self.file, itemTimeNs: 20 * Nanos.second, hostTimeNs: 11 * Nanos.second, rate: 1, originator: origin(.play, reason: "correction"), errorNs: -800 * Self.ms)
        #expect(p.handle(.command(.seek(c)), now: 10_800 * Self.ms) == [.setPause(true), .seek(positionNs: 20 * Nanos.second)])
        #expect(p.handle(.command(.seek(c)), now: 10_801 * Self.ms) == [])
        #expect(p.handle(.tick, now: 11 * Nanos.second) == [.setPause(false)])
    }

    @Test("positions are reported only while mpv plays on the group timeline, not while a start is being carried out")
    func reportsOnlyWhilePlaying() {
        var p = loaded()
        #expect(!p.reports(readingAt: 10, now: 10))
        _ = p.handle(timeline(.playing, position: 0, at: Nanos.second), now: 500 * Self.ms)
        #expect(!p.reports(readingAt: 600 * Self.ms, now: 600 * Self.ms))
        _ = p.handle(.tick, now: Nanos.second)
        _ = p.handle(.pause(false), now: Nanos.second)
        _ = p.handle(.playbackRestarted(positionNs: 0), now: Nanos.second)
        // The first 100 ms after the resume are skipped, then every reading goes.
        #expect(!p.reports(readingAt: 1_050 * Self.ms, now: 1_050 * Self.ms))
        #expect(p.reports(readingAt: 1_200 * Self.ms, now: 1_200 * Self.ms))
    }

    @Test("mpv waiting for its cache makes the player buffering, then ready; an ended file is unloaded")
    func readiness() {
        var p = playing()
        #expect(p.handle(.pausedForCache(true), now: 5 * Nanos.second) == [.buffering])
        #expect(p.handle(.pausedForCache(false), now: 6 * Nanos.second) == [.ready])
        // Without a file the next start may be a seek again: the calibrated latency is declared.
        #expect(p.handle(.fileEnded, now: 7 * Nanos.second) == [.unload, .declareStartLatency(p.calibration.startLatencyNs)])
        #expect(p.item == nil)
    }

    @Test("connected to the agent again: a file mpv loaded meanwhile is loaded, one it closed is unloaded, one the coordinator restored is left alone")
    func reloadsAfterReconnection() {
        var p = loaded()
        #expect(p.handle(.agentConnected(currentItem: Self.file), now: Nanos.second) == [])
        #expect(p.handle(.agentConnected(currentItem: nil), now: Nanos.second) == [
            .load(LoadRequest(item: Self.file, share: .group, title: "film", durationNs: 600 * Nanos.second)), .ready,
        ])
        _ = p.handle(.fileEnded, now: 2 * Nanos.second)
        #expect(p.handle(.agentConnected(currentItem: Self.file), now: 3 * Nanos.second) == [.unload])
    }

    @Test("a wait holds mpv at the position and says on the OSD whom the group waits for")
    func waitHolds() {
        var p = loaded()
        let w = BufferingCommand(item: Self.file, itemTimeNs: 0, hostTimeNs: 100 * Self.ms, originator: origin(.play), waitingFor: [WaitingForView(peerName: "kitchen", player: "mpv", why: "buffering")])
        #expect(p.handle(.command(.buffer(w)), now: 100 * Self.ms) == [.showText("Waiting for kitchen (buffering)"), .seek(positionNs: 0)])
    }

    @Test("instructions for another item are ignored")
    func otherItemIgnored() {
        var p = loaded()
        let t = PlayCommand(item: "/other.mkv", itemTimeNs: 0, hostTimeNs: Nanos.second, rate: 1, originator: origin(.play))
        #expect(p.handle(.command(.play(t)), now: 0) == [])
        #expect(p.nextDeadline == nil)
    }

    @Test("a group rate carrying clock skew, read back rounded to mpv's 6 decimals, is not the user's speed change")
    func roundedSpeedIsNotAnIntent() {
        var p = playing()
        let actions = p.handle(timeline(.playing, position: 14 * Nanos.second, at: 5_200 * Self.ms, rate: 1.0000069638553888, local: true), now: 5_010 * Self.ms)
        #expect(actions.contains(.setSpeed(1.0000069638553888)))
        #expect(p.handle(.speed(1.000007), now: 5_011 * Self.ms) == [])
    }

    @Test("two seeks of the bridge in flight, restarted one after the other, are not a user seek")
    func overlappingOwnSeeks() {
        var p = playing()
        _ = p.handle(timeline(.playing, position: 20 * Nanos.second, at: 5_300 * Self.ms, action: .seek, local: true), now: 5 * Nanos.second)
        #expect(p.handle(.seekStarted, now: 5_001 * Self.ms) == [])
        _ = p.handle(timeline(.playing, position: 30 * Nanos.second, at: 5_400 * Self.ms, action: .seek, local: true), now: 5_002 * Self.ms)
        #expect(p.handle(.playbackRestarted(positionNs: 20 * Nanos.second), now: 5_003 * Self.ms) == [])
        #expect(p.handle(.seekStarted, now: 5_004 * Self.ms) == [])
        #expect(p.handle(.playbackRestarted(positionNs: 30 * Nanos.second), now: 5_005 * Self.ms) == [])
        _ = p.handle(.tick, now: 5_400 * Self.ms)
        // Once they are done, the user's seek is the user's again.
        #expect(p.handle(.seekStarted, now: 6 * Nanos.second) == [])
        #expect(p.handle(.playbackRestarted(positionNs: 50 * Nanos.second), now: 6_001 * Self.ms) == [.intent(IntentRequest(action: .seek, positionNs: 50 * Nanos.second))])
    }

    @Test("a playing mpv on the timeline (within 10 ms) pauses at the group's instant without a seek; one further ahead also seeks")
    func pauseWithoutSeekWhenOnTimeline() {
        var p = playing()
        _ = p.handle(.position(11_900 * Self.ms, at: 2_900 * Self.ms), now: 2_900 * Self.ms)
        _ = p.handle(timeline(.paused, position: 12 * Nanos.second, at: 3 * Nanos.second, action: .pause, local: true), now: 2_950 * Self.ms)
        #expect(p.handle(.tick, now: 3 * Nanos.second) == [.setPause(true)])

        // 5 ms ahead (a reading during a rate correction, say): paused at the instant, no seek.
        var a = playing()
        _ = a.handle(.position(11_905 * Self.ms, at: 2_900 * Self.ms), now: 2_900 * Self.ms)
        _ = a.handle(timeline(.paused, position: 12 * Nanos.second, at: 3 * Nanos.second, action: .pause, local: true), now: 2_950 * Self.ms)
        #expect(a.handle(.tick, now: 3 * Nanos.second) == [.setPause(true)])
        // 20 ms ahead: paused at the instant, then sought back exactly.
        var q = playing()
        _ = q.handle(.position(11_920 * Self.ms, at: 2_900 * Self.ms), now: 2_900 * Self.ms)
        _ = q.handle(timeline(.paused, position: 12 * Nanos.second, at: 3 * Nanos.second, action: .pause, local: true), now: 2_950 * Self.ms)
        #expect(q.handle(.tick, now: 3 * Nanos.second) == [.setPause(true), .seek(positionNs: 12 * Nanos.second)])
        // 10 ms behind: paused 10 ms later, where the group paused, no seek.
        var r = playing()
        _ = r.handle(.position(11_890 * Self.ms, at: 2_900 * Self.ms), now: 2_900 * Self.ms)
        _ = r.handle(timeline(.paused, position: 12 * Nanos.second, at: 3 * Nanos.second, action: .pause, local: true), now: 2_950 * Self.ms)
        #expect(r.handle(.tick, now: 3 * Nanos.second) == [])
        #expect(r.handle(.tick, now: 3_010 * Self.ms) == [.setPause(true)])
    }

    @Test("the user's pause, and no reading since mpv resumed by the group's instant: it waits for one and pauses where the group paused, without a seek; with none within 100 ms, it pauses and seeks")
    func groupPauseWaitsForAReading() {
        var p = playing()
        #expect(p.handle(.pause(true), now: 3 * Nanos.second) == [.intent(IntentRequest(action: .pause)), .setPause(false)])
        _ = p.handle(timeline(.paused, position: 12_130 * Self.ms, at: 3_130 * Self.ms, action: .pause, local: true), now: 3_002 * Self.ms)
        _ = p.handle(.pause(false), now: 3_060 * Self.ms)  // mpv took 60 ms to resume
        #expect(p.handle(.tick, now: 3_130 * Self.ms) == [])
        #expect(p.nextDeadline == 3_155 * Self.ms)
        // The reading: 12.08 s at 3.14 s, so it reaches 12.13 s at 3.19 s (60 ms late).
        #expect(p.handle(.position(12_080 * Self.ms, at: 3_140 * Self.ms), now: 3_141 * Self.ms).contains(.setPause(true)) == false)
        #expect(p.nextDeadline == 3_190 * Self.ms)
        #expect(p.handle(.tick, now: 3_190 * Self.ms) == [.setPause(true)])

        var q = playing()
        _ = q.handle(.pause(true), now: 3 * Nanos.second)
        _ = q.handle(timeline(.paused, position: 12_130 * Self.ms, at: 3_130 * Self.ms, action: .pause, local: true), now: 3_002 * Self.ms)
        _ = q.handle(.pause(false), now: 3_060 * Self.ms)
        for t in stride(from: Int64(3_130), to: 3_230, by: 25) { #expect(q.handle(.tick, now: t * Self.ms) == []) }
        #expect(q.handle(.tick, now: 3_230 * Self.ms) == [.setPause(true), .seek(positionNs: 12_130 * Self.ms)])
    }

    @Test("readings are wanted soon only while a group pause is pending for an mpv with no reading since it resumed")
    func wantsReadingsSoon() {
        var p = playing()
        _ = p.handle(.position(11 * Nanos.second, at: 2 * Nanos.second), now: 2 * Nanos.second)
        #expect(!p.wantsPositionsSoon)
        _ = p.handle(.pause(true), now: 3 * Nanos.second)  // the user pauses; the bridge resumes mpv
        _ = p.handle(timeline(.paused, position: 12_050 * Self.ms, at: 3_050 * Self.ms, action: .pause, local: true), now: 3_002 * Self.ms)
        _ = p.handle(.pause(false), now: 3_004 * Self.ms)
        #expect(p.wantsPositionsSoon)
        _ = p.handle(.position(12_008 * Self.ms, at: 3_014 * Self.ms), now: 3_014 * Self.ms)
        #expect(!p.wantsPositionsSoon)
        // Another mpv, playing on with a reading: the group's pause needs no haste.
        var q = playing()
        _ = q.handle(.position(11 * Nanos.second, at: 2 * Nanos.second), now: 2 * Nanos.second)
        _ = q.handle(timeline(.paused, position: 12_050 * Self.ms, at: 3_050 * Self.ms, action: .pause), now: 3_002 * Self.ms)
        #expect(!q.wantsPositionsSoon)
    }

    @Test("the group's pause arriving before mpv reports the bridge's undoing of the user's pause: that report is not a play")
    func revertReportedAfterGroupPause() {
        var p = playing()
        #expect(p.handle(.pause(true), now: 3 * Nanos.second) == [.intent(IntentRequest(action: .pause)), .setPause(false)])
        _ = p.handle(timeline(.paused, position: 12_130 * Self.ms, at: 3_130 * Self.ms, action: .pause, local: true), now: 3_002 * Self.ms)
        #expect(p.handle(.pause(false), now: 3_003 * Self.ms) == [])
    }

    // MARK: - Starts in place

    @Test("a play from where mpv stands after the bridge's exact seek needs no seek: it unpauses at the anchor")
    func playInPlaceAfterSeek() {
        var p = loaded()  // paused and sought to 0
        let actions = p.handle(timeline(.playing, position: 0, at: 400 * Self.ms, local: true), now: 100 * Self.ms)
        #expect(!actions.contains { if case .seek = $0 { true } else { false } })
        #expect(p.nextDeadline == 400 * Self.ms)
        #expect(p.handle(.tick, now: 400 * Self.ms) == [.setPause(false)])
    }

    @Test("paused without a seek, mpv stands where a reading once paused says; a play from the group's position unpauses that much later when it is ahead")
    func playInPlaceAfterPauseReading() {
        var p = playing()
        _ = p.handle(.position(11_990 * Self.ms, at: 2_990 * Self.ms), now: 2_990 * Self.ms)
        _ = p.handle(timeline(.paused, position: 12 * Nanos.second, at: 3 * Nanos.second, action: .pause), now: 2_991 * Self.ms)
        #expect(p.handle(.tick, now: 3 * Nanos.second) == [.setPause(true)])
        _ = p.handle(.pause(true), now: 3_001 * Self.ms)
        // Estimated from the last reading: 12.001 s; a reading too soon after the pause is not trusted.
        #expect(p.wantsPositions)
        _ = p.handle(.position(11_950 * Self.ms, at: 3_010 * Self.ms), now: 3_010 * Self.ms)
        _ = p.handle(.position(12_004 * Self.ms, at: 3_030 * Self.ms), now: 3_030 * Self.ms)
        #expect(!p.wantsPositions)
        let actions = p.handle(timeline(.playing, position: 12 * Nanos.second, at: 5 * Nanos.second, local: true), now: 4_900 * Self.ms)
        #expect(!actions.contains { if case .seek = $0 { true } else { false } })
        #expect(p.nextDeadline == 5_004 * Self.ms)
    }

    @Test("the user's play: mpv is paused again first, stands where it played to, and starts in place that much later")
    func userPlayStartsInPlace() {
        var p = loaded()  // stands at 0
        #expect(p.handle(.pause(false), now: 100 * Self.ms) == [.setPause(true), .intent(IntentRequest(action: .play))])
        _ = p.handle(.pause(true), now: 103 * Self.ms)  // it played 3 ms
        _ = p.handle(timeline(.playing, position: 0, at: 200 * Self.ms, local: true), now: 105 * Self.ms)
        #expect(p.nextDeadline == 203 * Self.ms)
        #expect(p.handle(.tick, now: 203 * Self.ms) == [.setPause(false)])
    }

    @Test("a start in place due a little too soon is made at the minimum lead; one due long ago, or far from where mpv stands, seeks")
    func inPlaceTooSoonOrTooFar() {
        var p = loaded()
        _ = p.handle(timeline(.playing, position: 0, at: 105 * Self.ms, local: true), now: 100 * Self.ms)
        #expect(p.nextDeadline == 110 * Self.ms)  // 5 ms late rather than a seek
        var q = loaded()
        let late = q.handle(timeline(.playing, position: 0, at: 80 * Self.ms, local: true), now: 100 * Self.ms)
        #expect(late.contains(.seek(positionNs: 30 * Self.ms)))
        var r = loaded()
        let far = r.handle(timeline(.playing, position: 150 * Self.ms, at: 400 * Self.ms, local: true), now: 100 * Self.ms)
        #expect(far.contains(.seek(positionNs: 150 * Self.ms)))
    }

    @Test("the user's seek forgets where mpv stands: the next play seeks")
    func userSeekForgetsStanding() {
        var p = loaded()
        _ = p.handle(.seekStarted, now: 100 * Self.ms)
        _ = p.handle(.playbackRestarted(positionNs: 0), now: 110 * Self.ms)
        let actions = p.handle(timeline(.playing, position: 0, at: 400 * Self.ms, local: true), now: 120 * Self.ms)
        #expect(actions.contains(.seek(positionNs: 0)))
    }

    @Test("the declared start latency: the calibrated one before the group has a timeline, the in-place one while mpv follows it, the fixed one when fixed")
    func declaredStartLatency() {
        var p = P()
        let calibrated = p.calibration.startLatencyNs
        #expect(p.declaredStartLatencyNs == calibrated)
        _ = p.handle(.pause(true), now: 0)
        _ = p.handle(.speed(1), now: 0)
        #expect(p.handle(.fileLoaded(path: Self.file, durationNs: nil, title: nil), now: 0).contains(.declareStartLatency(calibrated)) == false)
        let following = p.handle(timeline(.paused, position: 0, at: 0, action: .load, local: true), now: 0)
        #expect(following.last == .declareStartLatency(P.Configuration().inPlaceLatencyNs))
        #expect(p.handle(.tick, now: 1).isEmpty)
        #expect(p.handle(.fileEnded, now: 2) == [.unload, .declareStartLatency(calibrated)])

        var c = P.Configuration()
        c.startLatencyNs = 200 * Self.ms
        var q = P(configuration: c)
        _ = q.handle(.fileLoaded(path: Self.file, durationNs: nil, title: nil), now: 0)
        #expect(!q.handle(timeline(.paused, position: 0, at: 0, action: .load, local: true), now: 0).contains(.declareStartLatency(200 * Self.ms)))
        #expect(q.declaredStartLatencyNs == 200 * Self.ms)
    }

    @Test("the pausing user's own mpv, resumed by the bridge and with no reading since, pauses where the group pauses by where it stood when it resumed: no seek")
    func userPauseWithoutReadingUsesWhereItStood() {
        var p = loaded()  // stands at 0
        _ = p.handle(timeline(.playing, position: 0, at: 200 * Self.ms, local: true), now: 100 * Self.ms)
        _ = p.handle(.tick, now: 200 * Self.ms)
        _ = p.handle(.pause(false), now: 200 * Self.ms)
        _ = p.handle(.position(790 * Self.ms, at: 990 * Self.ms), now: 990 * Self.ms)
        // The user pauses at 1 s (at 0.8 s of the film); mpv is resumed 10 ms later; no reading comes.
        #expect(p.handle(.pause(true), now: 1_000 * Self.ms) == [.intent(IntentRequest(action: .pause)), .setPause(false)])
        _ = p.handle(timeline(.paused, position: 850 * Self.ms, at: 1_050 * Self.ms, action: .pause, local: true), now: 1_002 * Self.ms)
        _ = p.handle(.pause(false), now: 1_010 * Self.ms)
        #expect(p.handle(.tick, now: 1_050 * Self.ms) == [])
        #expect(p.nextDeadline == 1_060 * Self.ms)
        #expect(p.handle(.tick, now: 1_060 * Self.ms) == [.setPause(true)])
    }
}
