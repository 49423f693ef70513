import Foundation
import LockstepCore
import LockstepLab
import LockstepMPV
import Testing

/// mpv in lab hosts, driven and probed from the main namespace through sockets under the
/// lab's directory: what `tools/bench mpv` and the future `lockstep mpv` lab tests build on.
@Suite("Lab: mpv", .enabled(if: Lab.isEnabled, "needs root and LOCKSTEP_LAB=1"), .serialized)
struct MpvLabTests {
    @Test("headless mpv in three hosts: commands reach each, and the probe sees a 250 ms head start to within a millisecond")
    func threeHosts() async throws {
        let media = try TestMedia.tone(seconds: 60)
        let lab = try Lab(hosts: 3, avahi: false, name: "mpv")
        defer { lab.destroy() }
        var players: [MPVConnection] = [], watchers: [MPVConnection] = []
        for h in 1...3 {
            var options = MPVOptions(socketPath: lab.hostDirectory(h) + "/mpv.sock", media: media)
            options.paused = true
            try lab.spawn(h, "mpv", options.arguments)
            let c = try await MPVConnection.connect(socketPath: options.socketPath, timeout: 10)
            let loaded = await waitUntil(timeout: 10) { (try? await c.get("duration").double) != nil }
            #expect(loaded != nil, "h\(h) loaded the media")
            players.append(c)
            watchers.append(try await MPVConnection.connect(socketPath: options.socketPath))
        }
        // h1 and h2 start together, h3 250 ms later: h3 is 250 ms behind (within mpv's reaction).
        let (first, second) = (players[0], players[1])
        async let r1 = first.send(["set_property", "pause", false])
        async let r2 = second.send(["set_property", "pause", false])
        let (s1, s2) = (try await r1.sentAt, try await r2.sentAt)
        try await Task.sleep(nanoseconds: 250_000_000)
        let s3 = try await players[2].send(["set_property", "pause", false]).sentAt
        let probe = PositionProbe(players: watchers)
        try await Task.sleep(nanoseconds: 300_000_000)
        probe.start()
        try await Task.sleep(nanoseconds: 1_000_000_000)
        let tracks = await probe.stop()
        let t = MonotonicClock.read() - 500 * Nanos.millisecond
        let p = try tracks.map { try #require($0.position(at: t)) }
        // All three started from 0: position differences are the differences of start instants.
        #expect(abs((p[0] - p[1]) - Double(s2 - s1) / 1e9) < 0.001)
        #expect(abs((p[0] - p[2]) - Double(s3 - s1) / 1e9) < 0.001, "h3 behind by \(p[0] - p[2]) s, started \(Double(s3 - s1) / 1e9) s later")
        for c in players { _ = try? await c.command("quit") }
    }
}
