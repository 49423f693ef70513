import Foundation
import LockstepClient
import LockstepLab
import LockstepPlayerProtocol
import Testing

/// The leaderless group state on real hosts.
@Suite("Lab: group state", .enabled(if: Lab.isEnabled, "needs root and LOCKSTEP_LAB=1"), .serialized)
struct GroupLabTests {
    @Test("five agents: concurrent commands from three of them, then every agent holds the identical state")
    func concurrentCommandsConverge() async throws {
        let lab = try Lab(hosts: 5, name: "group")
        defer { lab.destroy() }
        for h in 1...5 { try lab.startAgent(h, flags: ["--sim-clock-offset", String(h * 4 - 10), "--sim-clock-skew", String(h * 30 - 90)]) }
        let ready = try await waitUntil(timeout: 15) {
            for h in 1...5 {
                let p: PeersResult = try await lab.request(h, "peers")
                if p.peers.filter({ $0.state == "reachable" }).count < 4 { return false }
            }
            return true
        }
        #expect(ready != nil)
        let _: GroupStateView = try await lab.request(1, "command", CommandRequest(action: .load, item: "file:///films/lab.mkv", title: "Lab"))
        try await Task.sleep(nanoseconds: 300_000_000)
        // Three hosts at once.
        async let a: GroupStateView = lab.request(2, "command", CommandRequest(action: .play))
        async let b: GroupStateView = lab.request(3, "command", CommandRequest(action: .seek, positionNs: 42_000_000_000))
        async let c: GroupStateView = lab.request(4, "command", CommandRequest(action: .rate, rate: 1.5))
        _ = try await (a, b, c)
        var views: [GroupStateView] = []
        let converged = try await waitUntil(timeout: 5) {
            views = []
            for h in 1...5 { views.append(try await lab.request(h, "state")) }
            return Set(views.map(\.fingerprint)).count == 1
        }
        #expect(converged != nil, "one state everywhere (fingerprints: \(views.map(\.fingerprint)))")
        // The same replicated content, field by field, and the same origin for the last command.
        let items = views.map { $0.items.map { [$0.id, $0.state, String($0.positionNs), String($0.rate), String($0.originTimeNs), $0.origin.peerID, String($0.origin.lamport)] } }
        #expect(Set(items.map { "\($0)" }).count == 1)
        #expect(Set(views.map { $0.version.map(\.counter) }).count == 1)
        // And every agent places the playing timeline at the same moment of its host clock
        // (one kernel clock in the lab), within the clocks' error.
        let positions = views.compactMap { v in v.item.flatMap { i in i.hostTimeNs.map { ($0, i.positionNs) } } }
        #expect(positions.count == 5)
        let anchors = positions.map(\.0)
        #expect(anchors.max()! - anchors.min()! < 1_000_000, "anchors within 1 ms on a plain link (were \(anchors.map { $0 - anchors[0] }) ns)")
    }
}

/// The vector-clock merge's scenarios on real agents: every intent holds as the user expects.
@Suite("Lab: merge", .enabled(if: Lab.isEnabled, "needs root and LOCKSTEP_LAB=1"), .serialized)
struct MergeLabTests {
    func check(_ o: MergeScenarios.Outcome) {
        print("merge lab: \(o.name): \(o.phase ?? "disagree") at \(o.positionS.map { String(format: "%.3f s", $0) } ?? "-") ×\(o.rate ?? 0), last \(o.lastAction ?? "-"), one state after \(o.convergedS.map { String(format: "%.2f s", $0) } ?? "never"), reported \(o.concurrencyReported)")
        #expect(o.convergedS != nil, "\(o.name): one state everywhere")
        #expect(o.concurrencyReported, "\(o.name): every agent reports the crossing commands")
        #expect(o.met, "\(o.name): \(o.expectation); got \(o.phase ?? "-") at \(o.positionS ?? -1) s ×\(o.rate ?? -1)")
    }

    @Test("a partition: seeks on one side, a later pause on the other; healed, every agent is paused where the pause found the timeline")
    func seeksThenPause() async throws { check(try await MergeScenarios.seeksThenPause()) }

    @Test("a seek to 1:40 and a pause at the same moment on two agents: paused at 1:40 everywhere, both reported")
    func seekAndPause() async throws { check(try await MergeScenarios.seekAndPause()) }
}

extension MergeLabTests {
    @Test("a three-way partition, a seek, a rate change and a pause on the three sides a second apart: healed, paused at 2x at 33 s everywhere")
    func threeWay() async throws { check(try await MergeScenarios.threeWay()) }
}
