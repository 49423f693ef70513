import Foundation
import LockstepClient
import LockstepCore
import LockstepPlayerProtocol

/// The vector-clock merge's scenarios on real agents in the lab, for `tools/bench merge` and the
/// lab tests: what a user did, which intents held, and how long the group took to agree.
public enum MergeScenarios {
    /// How a scenario ended.
    public struct Outcome: Sendable {
        public var name: String
        /// What the group ended in, on every agent (nil: agents disagree).
        public var phase: String?
        public var positionS: Double?
        public var rate: Double?
        /// Who caused the last change, and what it was.
        public var lastAction: String?
        /// From the heal (or the commands) until every agent held one state, seconds (nil: never).
        public var convergedS: Double?
        /// Every agent reported the crossing commands (`concurrent` in its state).
        public var concurrencyReported: Bool
        public var expectation: String
        public var met: Bool
    }

    /// A group of `hosts` agents (with simulated clocks a few seconds apart) playing an item from 0.
    static func group(hosts: Int, name: String) async throws -> Lab {
        let lab = try Lab(hosts: hosts, name: name)
        for h in 1...hosts { try lab.startAgent(h, flags: ["--sim-clock-offset", String(h * 3 - 6), "--sim-clock-skew", String(h * 20 - 50)]) }
        let ready = try await waitUntil(timeout: 20) {
            for h in 1...hosts {
                let p: PeersResult = try await lab.request(h, "peers")
                if p.peers.filter({ $0.state == "reachable" }).count < hosts - 1 { return false }
            }
            return true
        }
        guard ready != nil else {
            lab.destroy()
            throw Lab.Failure(description: "the agents did not all reach each other within 20 s")
        }
        try await Task.sleep(nanoseconds: 1_500_000_000)
        let _: GroupStateView = try await lab.request(1, "command", CommandRequest(action: .load, item: "file:///films/merge.mkv", title: "Merge"))
        try await Task.sleep(nanoseconds: 200_000_000)
        let _: GroupStateView = try await lab.request(1, "command", CommandRequest(action: .play))
        try await Task.sleep(nanoseconds: 500_000_000)
        return lab
    }

    /// Every agent's state once they agree (waiting up to `timeout`), and how long that took.
    static func agreed(_ lab: Lab, hosts: Int, timeout: Double = 10) async throws -> (views: [GroupStateView], seconds: Double?) {
        var views: [GroupStateView] = []
        let t = try await waitUntil(timeout: timeout, interval: 0.01) {
            views = []
            for h in 1...hosts { views.append(try await lab.request(h, "state")) }
            return Set(views.map(\.fingerprint)).count == 1
        }
        return (views, t)
    }

    static func outcome(_ name: String, _ views: [GroupStateView], converged: Double?, expectation: String, met: (ItemView) -> Bool) -> Outcome {
        let item = converged == nil ? nil : views.first?.item
        let reported = views.allSatisfy { !($0.concurrent ?? []).isEmpty }
        return Outcome(
            name: name, phase: item.map { $0.state.rawValue }, positionS: item.map { Double($0.positionNs) / 1e9 }, rate: item?.rate,
            lastAction: item.map { "\($0.origin.action.rawValue) by \($0.origin.name)" }, convergedS: converged, concurrencyReported: reported,
            expectation: expectation, met: item.map(met) ?? false && reported)
    }

    /// Two rooms lose contact; in one, someone seeks three times; a little later, in the other,
    /// someone pauses. Healed, the pause (the latest intent) holds, where it found the timeline.
    public static func seeksThenPause(hosts: Int = 4) async throws -> Outcome {
        let lab = try await group(hosts: hosts, name: "mseek")
        defer { lab.destroy() }
        let a = Array(1...(hosts / 2)), b = Array((hosts / 2 + 1)...hosts)
        try lab.partition([a, b])
        try await Task.sleep(nanoseconds: 3_500_000_000)  // both sides see the other lost
        for target in [100, 200, 300] {
            let _: GroupStateView = try await lab.request(a[0], "command", CommandRequest(action: .seek, positionNs: Int64(target) * 1_000_000_000))
            try await Task.sleep(nanoseconds: 400_000_000)
        }
        try await Task.sleep(nanoseconds: 1_000_000_000)
        let _: GroupStateView = try await lab.request(b.last!, "command", CommandRequest(action: .pause))
        try await Task.sleep(nanoseconds: 1_000_000_000)
        try lab.heal()
        let (views, t) = try await agreed(lab, hosts: hosts)
        return outcome(
            "partition: seeks on one side, a later pause on the other", views, converged: t,
            expectation: "paused, at 300 s plus the ~1.4 s played after the last seek", met: { $0.state == .paused && $0.positionNs > 301_000_000_000 && $0.positionNs < 301_800_000_000 })
    }

    /// Two people act at the same moment: one seeks to 1:40, the other pauses. Both hold.
    ///
    /// "The same moment" on a LAN means within a fraction of a millisecond, and two requests sent
    /// at once from this process are not reliably that close; so h3 is cut off from the others
    /// for the 300 ms around the presses: neither agent hears the other's command before issuing
    /// its own, as with two presses closer together than the network's delay.
    public static func seekAndPause(hosts: Int = 3) async throws -> Outcome {
        let lab = try await group(hosts: hosts, name: "mboth")
        defer { lab.destroy() }
        try lab.partition([Array(1...(hosts - 1)), [hosts]])
        async let seek: GroupStateView = lab.request(2, "command", CommandRequest(action: .seek, positionNs: 100_000_000_000))
        async let pause: GroupStateView = lab.request(hosts, "command", CommandRequest(action: .pause))
        _ = try await (seek, pause)
        try await Task.sleep(nanoseconds: 300_000_000)
        try lab.heal()
        let (views, t) = try await agreed(lab, hosts: hosts)
        return outcome(
            "concurrent: a seek to 1:40 and a pause at once (300 ms cut)", views, converged: t,
            expectation: "paused at 1:40 (to within a lead time)", met: { $0.state == .paused && $0.positionNs >= 100_000_000_000 && $0.positionNs < 100_100_000_000 })
    }

    /// Three rooms lose contact; a seek, a rate change and a pause, one per room, a second apart.
    public static func threeWay(hosts: Int = 6) async throws -> Outcome {
        let lab = try await group(hosts: hosts, name: "mthree")
        defer { lab.destroy() }
        let third = hosts / 3
        let sides = [Array(1...third), Array((third + 1)...(2 * third)), Array((2 * third + 1)...hosts)]
        try lab.partition(sides)
        try await Task.sleep(nanoseconds: 3_500_000_000)
        let _: GroupStateView = try await lab.request(sides[0][0], "command", CommandRequest(action: .seek, positionNs: 30_000_000_000))
        try await Task.sleep(nanoseconds: 1_000_000_000)
        let _: GroupStateView = try await lab.request(sides[1][0], "command", CommandRequest(action: .rate, rate: 2))
        try await Task.sleep(nanoseconds: 1_000_000_000)
        let _: GroupStateView = try await lab.request(sides[2][0], "command", CommandRequest(action: .pause))
        try await Task.sleep(nanoseconds: 500_000_000)
        try lab.heal()
        let (views, t) = try await agreed(lab, hosts: hosts)
        return outcome(
            "three-way partition: seek, rate, pause", views, converged: t,
            expectation: "paused at rate 2 at ~33 s (30 s, 1 s at 1x, 1 s at 2x)", met: { $0.state == .paused && $0.rate == 2 && abs(Double($0.positionNs) / 1e9 - 33) < 0.3 })
    }
}
