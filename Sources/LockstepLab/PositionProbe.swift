import LockstepCore
import LockstepMPV
import Synchronization
import LockstepPlayerProtocol

/// Reads several players' positions over their IPC, each reading stamped with host times, so
/// that their positions can be compared at common host instants.
///
///     let probe = PositionProbe(players: [a, b, c])       // connections of its own
///     probe.start()
///     ...                                                  // play, pause, seek…
///     let tracks = await probe.stop()                      // one PositionTrack per player
///     let spread = tracks.compactMap { $0.position(at: t) }
///
/// Each player is polled on its own task with `get_property` every ``interval`` seconds (one
/// request in flight per player: a stalled mpv delays only its own readings). The reply's
/// `sentAt`/`receivedAt` bracket the instant mpv evaluated the property (see ``MPVReply``);
/// ``PositionTrack`` turns the readings into estimates.
///
/// **What it reads.** `audio-pts` by default: mpv computes it at each request as the pts of
/// the audio last written minus the audio output's delay, and the null output's delay falls
/// with host time, so `audio-pts` moves between any two readings (measured steps: the round
/// trip itself, ~0.1 ms) instead of jumping once per block of audio like `time-pos` (10 ms
/// with `--ao-null-buffer=0.02` and 10 ms Opus frames, 50–100 ms with the defaults, 40 ms per
/// video frame at 25 fps). `time-pos` and `playback-time` can be read too (``PositionTrack``
/// then times their steps). mpv documents `audio-pts` as "Current audio playback position in
/// current file in seconds. Unlike time-pos, this updates more often than once per frame."
///
/// **Precision.** Measured on a 2-core Debian 12 VM with mpv 0.35.1 by ``ProbeCheck``
/// (two players paused at exactly known positions, resumed at known host instants): see the
/// `tools/bench mpv` report; readings are taken 100 times per second per player with round
/// trips of 0.1–0.3 ms.
public final class PositionProbe: Sendable {
    /// The players, in the order of the tracks.
    public let players: [MPVConnection]
    /// The properties read at each tick, in order.
    public let properties: [String]
    /// Seconds between two readings of one player.
    public let interval: Double

    private struct State {
        var tracks: [[PositionTrack]]
        var task: Task<Void, Never>?
    }

    private let state: Mutex<State>

    public init(players: [MPVConnection], properties: [String] = ["audio-pts"], interval: Double = 0.01) {
        self.players = players
        self.properties = properties
        self.interval = interval
        let empty = properties.map { PositionTrack(kind: .of(property: $0)) }
        self.state = Mutex(State(tracks: Array(repeating: empty, count: players.count)))
    }

    /// Starts polling (again, adding to the tracks, if it was stopped).
    public func start() {
        let task = Task { [players, properties, interval] in
            await withTaskGroup(of: Void.self) { group in
                for (index, player) in players.enumerated() {
                    group.addTask { await self.poll(player, index: index, properties: properties, interval: interval) }
                }
            }
        }
        let old = state.withLock { s in
            defer { s.task = task }
            return s.task
        }
        old?.cancel()
    }

    /// Stops polling and returns the tracks of the first property (one per player).
    @discardableResult
    public func stop() async -> [PositionTrack] {
        let task = state.withLock { s in
            defer { s.task = nil }
            return s.task
        }
        task?.cancel()
        await task?.value
        return tracks()
    }

    /// The readings so far of `property` (default: the first one), one track per player.
    public func tracks(_ property: String? = nil) -> [PositionTrack] {
        let p = property.flatMap { properties.firstIndex(of: $0) } ?? 0
        return state.withLock { $0.tracks.map { $0[p] } }
    }

    /// Forgets the readings so far.
    public func reset() {
        state.withLock { s in
            s.tracks = s.tracks.map { $0.map { PositionTrack(kind: $0.kind) } }
        }
    }

    private func poll(_ player: MPVConnection, index: Int, properties: [String], interval: Double) async {
        let step = Nanos.from(seconds: interval)
        var next = MonotonicClock.read()
        while !Task.isCancelled {
            for (p, property) in properties.enumerated() {
                guard let reply = try? await player.send(["get_property", .string(property)]) else {
                    if player.isClosed { return }
                    continue
                }
                state.withLock { $0.tracks[index][p].append(PositionSample(reply)) }
            }
            next += step
            let now = MonotonicClock.read()
            if next < now { next = now }
            try? await Task.sleep(nanoseconds: UInt64(next - now))
        }
    }
}
