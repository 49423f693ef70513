import LockstepCore
import LockstepLab
import LockstepMPV
import Testing

/// Synthetic players: a position that is a known function of host time, read every `every`
/// ms with a round trip of `rtt` µs.
private func readings(
    from start: Int64 = 0, to end: Int64 = 2 * Nanos.second, every: Int64 = 10 * Nanos.millisecond,
    rtt: Int64 = 200 * Nanos.microsecond, jitter: Int64 = 0, _ truth: (Int64) -> Double?
) -> [PositionSample] {
    var out: [PositionSample] = []
    var t = start, k: Int64 = 0
    while t <= end {
        // mpv evaluates somewhere inside the round trip; jitter moves it off the middle.
        let skew = jitter == 0 ? 0 : ((k * 7919) % (2 * jitter + 1)) - jitter
        let evaluated = t + skew
        out.append(PositionSample(sentAt: t - rtt / 2, receivedAt: t + rtt / 2, position: truth(evaluated)))
        t += every
        k += 1
    }
    return out
}

private let ms = Nanos.millisecond

@Suite("Position tracks")
struct PositionTrackTests {
    @Test("a steadily playing player is estimated between readings to within a microsecond")
    func steadyPlayback() throws {
        let track = PositionTrack(samples: readings { 12.0 + Double($0) / 1e9 })
        for t in stride(from: 100 * ms, to: 1_900 * ms, by: Int(37 * ms)) {
            let e = try #require(track.estimate(at: t))
            #expect(abs(e.position - (12.0 + Double(t) / 1e9)) < 1e-6)
            #expect(abs(e.rate - 1) < 1e-6)
        }
    }

    @Test("readings off the middle of their round trip by up to ±100 µs average out in the fit")
    func jitteredReadings() throws {
        let track = PositionTrack(samples: readings(jitter: 100_000) { 5.0 + Double($0) / 1e9 })
        let e = try #require(track.estimate(at: 1 * Nanos.second))
        #expect(abs(e.position - 6.0) < 30e-6)
        #expect(e.points > 10)
    }

    @Test("no estimate outside the readings, across a gap, or where the player had no position")
    func noEstimate() throws {
        var samples = readings(to: 500 * ms) { Double($0) / 1e9 }
        samples += readings(from: 900 * ms, to: 1_500 * ms) { Double($0) / 1e9 }
        samples += readings(from: 1_510 * ms, to: 1_600 * ms) { _ in nil }
        let track = PositionTrack(samples: samples)
        #expect(track.position(at: -5 * ms) == nil)
        #expect(track.position(at: 700 * ms) == nil)  // 400 ms without readings
        #expect(track.position(at: 1_550 * ms) == nil)
        #expect(track.position(at: 2 * Nanos.second) == nil)
        #expect(track.position(at: 300 * ms) != nil)
    }

    @Test("readings with a long round trip (a stalled mpv) are ignored")
    func longRoundTripsIgnored() throws {
        var samples = readings(to: 500 * ms) { Double($0) / 1e9 }
        samples.append(PositionSample(sentAt: 510 * ms, receivedAt: 1_510 * ms, position: 99))
        let track = PositionTrack(samples: samples)
        #expect(track.points.count == samples.count - 1)
    }

    @Test("a pause: positions near it stay accurate, and the instant it stopped is found to within a millisecond")
    func pause() throws {
        let stop = 1_003_300_000 as Int64  // host time of the pause
        let truth: (Int64) -> Double = { t in 20 + Double(min(t, stop)) / 1e9 }
        let track = PositionTrack(samples: readings(truth))
        for t in [500 * ms, 995 * ms, 1_020 * ms, 1_500 * ms] {
            let p = try #require(track.position(at: t))
            #expect(abs(p - truth(t)) < 0.003, "at \(t / ms) ms")
        }
        let found = try #require(track.stoppedMoving(after: 800 * ms))
        #expect(abs(found - stop) < 1 * ms)
        #expect(track.startedMoving(after: 1_100 * ms) == nil)
    }

    @Test("an unpause: the instant it started moving is found to within a millisecond")
    func unpause() throws {
        let start = 704_700_000 as Int64
        let track = PositionTrack(samples: readings { t in 3 + Double(max(t - start, 0)) / 1e9 })
        let found = try #require(track.startedMoving(after: 500 * ms))
        #expect(abs(found - start) < 1 * ms)
        #expect(track.stoppedMoving(after: 800 * ms) == nil)
    }

    @Test("a seek is a jump: found between the readings around it; steady playback is not one")
    func jump() throws {
        let seek = 1_234_000_000 as Int64
        let track = PositionTrack(samples: readings { t in t < seek ? Double(t) / 1e9 : 60 + Double(t - seek) / 1e9 })
        let found = try #require(track.jumped(after: 500 * ms))
        #expect(abs(found - seek) <= 5 * ms)
        #expect(track.jumped(after: 100 * ms, before: 1_200 * ms) == nil)
        #expect(track.position(at: seek) == nil, "no position between the two sides of a seek")
        let paused = PositionTrack(samples: readings { _ in 7.5 })
        #expect(paused.jumped(after: 0) == nil)
    }

    @Test("a stepping position (time-pos, 50 ms steps) read every 5 ms is recovered from its edges to within 1 ms")
    func steps() throws {
        // The value holds the true position of the last 50 ms boundary, with an arbitrary phase.
        let phase = 17.3e-3
        let truth: (Int64) -> Double = { t in 30 + Double(t) / 1e9 }
        let stepped: (Int64) -> Double? = { t in
            let x = truth(t) - phase
            return (x / 0.05).rounded(.down) * 0.05 + phase
        }
        let track = PositionTrack(kind: .steps, samples: readings(every: 5 * ms, stepped))
        let naive = PositionTrack(kind: .continuous, samples: readings(every: 5 * ms, stepped))
        for t in stride(from: 1_100 * ms, to: 1_800 * ms, by: Int(97 * ms)) {
            let p = try #require(track.position(at: t))
            #expect(abs(p - truth(t)) < 0.001, "at \(t / ms) ms: \(p - truth(t))")
        }
        // Interpolating the readings themselves is off by up to a whole step.
        let worst = stride(from: 1_100 * ms, to: 1_800 * ms, by: Int(7 * ms)).compactMap { t in naive.position(at: t).map { abs($0 - truth(t)) } }.max()!
        #expect(worst > 0.02)
    }
}
