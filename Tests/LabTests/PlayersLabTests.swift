import Foundation
import LockstepCore
import LockstepLab
import LockstepPlayerProtocol
import Testing

/// Reference players on real hosts: they start together, a late one joins where the group is,
/// and a suspended one is seen by the others.
@Suite("Lab: players", .enabled(if: Lab.isEnabled, "needs root and LOCKSTEP_LAB=1"), .serialized)
struct PlayersLabTests {
    @Test("three reference players start within 2 ms of each other, stay within 2 ms, and a late joiner lands on the group's position")
    func startTogether() async throws {
        let lab = try Lab(hosts: 4, name: "players")
        defer { lab.destroy() }
        for h in 1...4 { try lab.startAgent(h, flags: ["--sim-clock-offset", String(h * 5 - 12), "--sim-clock-skew", String(h * 40 - 100)]) }
        _ = try await waitUntil(timeout: 20) {
            for h in 1...4 {
                let p: PeersResult = try await lab.request(h, "peers")
                if p.peers.filter({ $0.state == "reachable" }).count < 3 { return false }
            }
            return true
        }
        try await Task.sleep(nanoseconds: 2_000_000_000)
        let ref = Lab.binDirectory + "/lockstep-refplayer"
        func spawn(_ h: Int) throws {
            try lab.spawn(h, "ref", [ref, "--socket", lab.socket(h), "--name", "ref\(h)", "--drift-ppm", String(h * 15 - 30), "--log", lab.hostDirectory(h) + "/ref.jsonl"])
        }
        for h in 1...3 { try spawn(h) }
        let ready = try await waitUntil(timeout: 15) {
            let p: PlayersResult = try await lab.request(1, "players")
            return p.players.filter { $0.participant.readiness == .ready }.count == 3
        }
        #expect(ready != nil)
        let state: GroupStateView = try await lab.request(2, "command", CommandRequest(action: .play))
        let anchor = try #require(state.item?.hostTimeNs)
        try await Task.sleep(nanoseconds: 6_000_000_000)
        try spawn(4)
        try await Task.sleep(nanoseconds: 4_000_000_000)
        let traces = try (1...4).map { try PlayerTrace(name: "h\($0)", path: lab.hostDirectory($0) + "/ref.jsonl") }
        let three = Array(traces.prefix(3))
        let atStart = try #require(positionSpread(three, at: anchor + 50_000_000))
        #expect(atStart < 2_000_000, "start spread \(atStart) ns")
        let later = try #require(positionSpread(three, at: anchor + 5_000_000_000))
        #expect(later < 2_000_000, "spread after 5 s \(later) ns")
        let now = MonotonicClock.read() - 200_000_000
        let all = try #require(positionSpread(traces, at: now))
        #expect(all < 2_000_000, "the late joiner is with the others (spread \(all) ns)")
        #expect(try #require(traces[3].position(at: now)) > 8_000_000_000)

        // A suspension on h3 is visible to h1, and h3 stops following the group.
        let _: BeginSuspensionResult = try await lab.request(3, "suspend_player", SuspendParams(reason: "interruption"))
        let seen = try await waitUntil(timeout: 3) {
            let p: PlayersResult = try await lab.request(1, "players")
            return p.players.contains { $0.participant.name == "ref3" && $0.participant.suspensionReasons == ["interruption"] }
        }
        #expect(seen != nil)
    }

    struct SuspendParams: Codable, Sendable {
        var reason: String
    }
}
