import LockstepCore
import LockstepMPV
import LockstepPlayerProtocol

/// Proves ``PositionProbe``'s precision: two players are put a known distance apart and the
/// probe must find that distance.
///
/// A trial, with players A and B playing the same file:
/// 1. both pause; A seeks (exactly) to `position`, B to `position + positionOffset`; both
///    play for 300 ms and pause again;
/// 2. their paused positions `pA`, `pB` are read: exact values, no timing involved. (Paused
///    from playing, mpv resumes from precisely there: a line fitted to the readings after a
///    resume passes within 0.06 ms of the paused position at the instant the resume was
///    written. Not so right after a seek while paused: `audio-pts` and `time-pos` then read up to
///    the audio buffer, 0.18 s, short of where playback will resume; hence the 300 ms of play.)
/// 3. both resume, B `timeOffset` seconds after A (both at once for 0); the host times the two
///    requests were written, `sA` and `sB`, are recorded;
/// 4. so at any later common instant, B − A = (pB − pA) − (sB − sA): the truth;
/// 5. the probe reads both for `sampling` seconds and estimates B − A at the middle of that
///    time: the measurement.
///
/// The error (measured − truth) also contains how differently the two mpv react to their
/// resume request, so it bounds the probe's own error from above.
public enum ProbeCheck {
    public struct Trial: Sendable, Equatable {
        public var position: Double
        public var positionOffset: Double
        public var timeOffset: Double
        /// B − A, seconds, from the paused positions and the resume instants.
        public var truth: Double
        /// B − A as the probe measured it, per property read.
        public var measured: [String: Double]

        /// measured − truth, per property.
        public var errors: [String: Double] { measured.mapValues { $0 - truth } }
    }

    /// Runs one trial on two players (connections not used by anyone else for requests;
    /// events are not read). Leaves both playing.
    public static func trial(
        _ a: MPVConnection, _ b: MPVConnection, at position: Double,
        positionOffset: Double, timeOffset: Double,
        properties: [String] = ["audio-pts", "time-pos"], sampling: Double = 1.5, interval: Double = 0.005
    ) async throws -> Trial {
        for player in [a, b] { try await player.set("pause", true) }
        try await a.command("seek", .double(position), "absolute+exact")
        try await b.command("seek", .double(position + positionOffset), "absolute+exact")
        for player in [a, b] { try await waitForSeek(player) }
        for player in [a, b] { try await player.set("pause", false) }
        try await Task.sleep(nanoseconds: 300_000_000)
        for player in [a, b] { try await player.set("pause", true) }
        let pA = try await pausedPosition(a), pB = try await pausedPosition(b)

        let sA: Int64, sB: Int64
        if timeOffset == 0 {
            async let ra = a.send(["set_property", "pause", false])
            async let rb = b.send(["set_property", "pause", false])
            (sA, sB) = (try await ra.sentAt, try await rb.sentAt)
        } else {
            let (first, second) = timeOffset > 0 ? (a, b) : (b, a)
            let s1 = try await first.send(["set_property", "pause", false]).sentAt
            let target = s1 + Nanos.from(seconds: abs(timeOffset))
            // Sleep most of the way, then spin: the instant only needs to be known, not exact.
            let now = MonotonicClock.read()
            if target - now > 2 * Nanos.millisecond { try await Task.sleep(nanoseconds: UInt64(target - now - 2 * Nanos.millisecond)) }
            while MonotonicClock.read() < target {}
            let s2 = try await second.send(["set_property", "pause", false]).sentAt
            (sA, sB) = timeOffset > 0 ? (s1, s2) : (s2, s1)
        }
        let truth = (pB - pA) - Double(sB - sA) / 1e9

        try await Task.sleep(nanoseconds: 200_000_000)
        let probe = PositionProbe(players: [a, b], properties: properties, interval: interval)
        let start = MonotonicClock.read()
        probe.start()
        try await Task.sleep(nanoseconds: UInt64(sampling * 1e9))
        await probe.stop()
        let instant = start + Nanos.from(seconds: sampling / 2)
        var measured: [String: Double] = [:]
        for property in properties {
            let tracks = probe.tracks(property)
            if let xa = tracks[0].position(at: instant), let xb = tracks[1].position(at: instant) {
                measured[property] = xb - xa
            }
        }
        return Trial(position: position, positionOffset: positionOffset, timeOffset: timeOffset, truth: truth, measured: measured)
    }

    /// Waits until a seek just requested has been carried out (`seeking` false and a position
    /// known, twice 20 ms apart, at least 60 ms after the request).
    static func waitForSeek(_ player: MPVConnection, timeout: Double = 5) async throws {
        try await Task.sleep(nanoseconds: 20_000_000)
        let deadline = MonotonicClock.read() + Nanos.from(seconds: timeout)
        var ready = 0
        while MonotonicClock.read() < deadline {
            let seeking = try await player.get("seeking").bool
            let known = (try? await player.get("audio-pts").double) != nil
            ready = seeking == false && known ? ready + 1 : 0
            if ready >= 2 { return }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        throw MPVError.failed(command: "seek", error: "not done within \(timeout) s")
    }

    /// The position of a player just paused: `audio-pts` read until it holds still.
    static func pausedPosition(_ player: MPVConnection, timeout: Double = 5) async throws -> Double {
        let deadline = MonotonicClock.read() + Nanos.from(seconds: timeout)
        var last: Double?
        while MonotonicClock.read() < deadline {
            try await Task.sleep(nanoseconds: 20_000_000)
            let value = try? await player.get("audio-pts").double
            if let value, value == last { return value }
            last = value
        }
        throw MPVError.failed(command: "pause", error: "the position did not hold still within \(timeout) s")
    }
}
