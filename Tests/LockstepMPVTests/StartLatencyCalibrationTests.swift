import LockstepClient
import LockstepCore
import LockstepMPV
import LockstepPlayerProtocol
import Testing

/// The start latency learnt from mpv's own exact seeks, with time as an argument.
@Suite("start latency calibration")
struct StartLatencyCalibrationTests {
    typealias C = StartLatencyCalibration
    static let ms = Nanos.millisecond

    func calibration(_ samples: [Int64]) -> C {
        var c = C()
        for s in samples { c.record(s * Self.ms) }
        return c
    }

    @Test("before any seek it is the initial 120 ms; after, the p95 times 1.5 plus 10 ms")
    func fromTheSeeks() {
        #expect(C().startLatencyNs == 120 * Self.ms)
        // 8 seeks: nearest-rank p95 of 8 is the largest, 60 ms → 100 ms.
        let c = calibration([5, 7, 6, 60, 8, 9, 6, 7])
        #expect(c.p95Ns == 60 * Self.ms)
        #expect(c.startLatencyNs == 100 * Self.ms)
    }

    @Test("never below the 80 ms floor, never above the 2 s ceiling")
    func floorAndCeiling() {
        #expect(calibration([1, 2, 3]).startLatencyNs == 80 * Self.ms)
        #expect(calibration([900, 950]).startLatencyNs == 1_435 * Self.ms)
        var big = C.Configuration()
        big.longestSampleNs = 10 * Nanos.second
        var c = C(configuration: big)
        c.record(3 * Nanos.second)
        #expect(c.startLatencyNs == 2 * Nanos.second)
    }

    @Test("from 20 seeks on, one slow seek in the window does not count (p95 by nearest rank)")
    func oneOutlierIgnored() {
        let c = calibration(Array(repeating: 10, count: 19) + [300])
        #expect(c.p95Ns == 10 * Self.ms)
        #expect(c.startLatencyNs == 80 * Self.ms)
    }

    @Test("only the last 32 seeks count: a file that seeks fast after a slow one lowers it again")
    func windowForgets() {
        var c = calibration(Array(repeating: 80, count: 32))
        #expect(c.startLatencyNs == 130 * Self.ms)
        for _ in 0..<30 { c.record(10 * Self.ms) }
        #expect(c.startLatencyNs == 130 * Self.ms)  // two 80 ms seeks left: p95 of 32 is the 31st
        c.record(10 * Self.ms)
        #expect(c.samples.count == 32)
        #expect(c.startLatencyNs == 80 * Self.ms)
    }

    @Test("a seek is timed from its issue to mpv's playback-restart; seeks merged by mpv count once, from the first")
    func issuedToRestarted() {
        var c = C()
        c.seekIssued(now: 1_000 * Self.ms)
        c.seekIssued(now: 1_010 * Self.ms)  // merged with the first
        c.seekCompleted(now: 1_050 * Self.ms)
        c.seekCompleted(now: 1_060 * Self.ms)  // nothing pending: not a sample
        #expect(c.samples == [50 * Self.ms])
    }

    @Test("a stopped mpv is not a slow seek: over 1 s is not counted, and a seek with no restart within 2 s is forgotten")
    func stallsAreNotSeeks() {
        var c = C()
        c.seekIssued(now: 0)
        c.seekCompleted(now: 1_500 * Self.ms)  // SIGSTOPped for a while
        c.seekIssued(now: 2_000 * Self.ms)
        c.seekIssued(now: 4_500 * Self.ms)  // the one before never completed
        c.seekCompleted(now: 4_520 * Self.ms)
        #expect(c.samples == [20 * Self.ms])
        c.record(-1)
        #expect(c.samples == [20 * Self.ms])
    }
}

/// The bridge's policy uses the calibrated lead unless one is fixed.
@Suite("mpv bridge policy: start latency")
struct MPVBridgePolicyCalibrationTests {
    typealias P = MPVBridgePolicy
    static let ms = Nanos.millisecond
    static let file = "/media/film.mkv"

    func timeline(_ state: TimelineState, position: Int64, at: Int64) -> P.Input {
        let o = Origin(peerID: "p1", name: "here", action: .play, reason: nil, local: true, lamport: 1)
        guard state == .playing else { return .command(.pause(PauseCommand(item: Self.file, itemTimeNs: position, hostTimeNs: at, originator: o))) }
        return .command(.play(PlayCommand(item: Self.file, itemTimeNs: position, hostTimeNs: at, rate: 1, originator: o)))
    }

    @Test("the policy's own exact seeks set its calibrated start latency, declared only without a group timeline; a start with less notice is still made at the group's instant and position, one within 10 ms is moved later")
    func ownSeeksCalibrate() {
        var p = P()
        _ = p.handle(.pause(true), now: 0)
        _ = p.handle(.speed(1), now: 0)
        _ = p.handle(.fileLoaded(path: Self.file, durationNs: 600 * Nanos.second, title: nil), now: 0)
        #expect(p.startLatencyNs == 120 * Self.ms)
        // The group is paused at 0: mpv is sought there; its seek takes 60 ms. It follows the group
        // now: its plays and pauses need no seek, and it declares the in-place latency.
        #expect(p.handle(timeline(.paused, position: 0, at: 0), now: 0) == [.seek(positionNs: 0), .declareStartLatency(60 * Self.ms)])
        _ = p.handle(.seekStarted, now: 1 * Self.ms)
        _ = p.handle(.playbackRestarted(positionNs: 0), now: 60 * Self.ms)
        #expect(p.calibration.samples == [60 * Self.ms])
        #expect(p.calibration.startLatencyNs == 100 * Self.ms)
        #expect(p.startLatencyNs == 60 * Self.ms)
        // 50 ms of notice: less than it declares, but the same target as every other mpv (an
        // exact seek's landing depends on its target) beats a later start elsewhere.
        #expect(p.handle(timeline(.playing, position: 10 * Nanos.second, at: 1_050 * Self.ms), now: 1_000 * Self.ms) == [.seek(positionNs: 10 * Nanos.second)])
        #expect(p.nextDeadline == 1_050 * Self.ms)
        // 4 ms of notice: moved to 10 ms, 6 ms further on.
        var q = p
        #expect(q.handle(timeline(.playing, position: 10 * Nanos.second, at: 1_004 * Self.ms), now: 1_000 * Self.ms) == [.seek(positionNs: 10_006 * Self.ms)])
        #expect(q.nextDeadline == 1_010 * Self.ms)
    }

    @Test("a user's seek does not calibrate; a fixed start latency (--start-latency-ms) is kept whatever the seeks cost")
    func userSeeksAndFixedLead() {
        var c = P.Configuration()
        c.startLatencyNs = 50 * Self.ms
        for configuration in [P.Configuration(), c] {
            var p = P(configuration: configuration)
            _ = p.handle(.pause(true), now: 0)
            _ = p.handle(.fileLoaded(path: Self.file, durationNs: nil, title: nil), now: 0)
            _ = p.handle(.seekStarted, now: 0)  // the user's
            _ = p.handle(.playbackRestarted(positionNs: 5 * Nanos.second), now: 500 * Self.ms)
            #expect(p.calibration.samples.isEmpty)
            _ = p.handle(timeline(.paused, position: 0, at: 0), now: Nanos.second)
            _ = p.handle(.seekStarted, now: Nanos.second)
            _ = p.handle(.playbackRestarted(positionNs: 0), now: 1_200 * Self.ms)
            #expect(p.calibration.samples == [200 * Self.ms])
            #expect(p.calibration.startLatencyNs == 310 * Self.ms)
            #expect(p.startLatencyNs == (configuration.startLatencyNs ?? configuration.inPlaceLatencyNs))
        }
    }
}
