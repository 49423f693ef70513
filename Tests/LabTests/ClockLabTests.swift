import Foundation
import LockstepCore
import LockstepLab
import LockstepPlayerProtocol
import Testing

/// Clock estimates against the known truth on real lab hosts: every agent runs a simulated
/// device clock (offset and skew on the wire only) over one shared kernel clock, so the true
/// offset between two agents follows from their flags. Limits are loose (a loaded 2-core machine
/// must not make them flake); `tools/bench clock` reports the real figures.
@Suite("Lab: clocks", .enabled(if: Lab.isEnabled, "needs root and LOCKSTEP_LAB=1"), .serialized)
struct ClockLabTests {
    /// A reading of every agent's `clock`, and each agent's (device, host) time pair from it.
    struct Reading {
        var results: [Int: ClockResult] = [:]
    }

    static let offsets: [Int: Double] = [1: 0, 2: 12.5, 3: -20]
    static let skews: [Int: Double] = [1: 0, 2: 40, 3: -80]

    func read(_ lab: Lab) async -> Reading {
        var r = Reading()
        for h in 1...3 { r.results[h] = try? await lab.request(h, "clock", as: ClockResult.self) }
        return r
    }

    /// |estimate − truth| and the bound, for every (observer, peer) pair of a reading.
    func errors(_ r: Reading, skews: [Int: Double] = Self.skews) -> [(observer: Int, peer: Int, error: Double, bound: Double)] {
        var out: [(Int, Int, Double, Double)] = []
        for (h, result) in r.results {
            for p in result.peers where p.samples > 0 {
                guard let peer = Int(p.name.dropFirst()), let fix = r.results[peer] else { continue }
                let truth = SimulatedClocks.trueOffset(observer: result, peer: fix, peerSkewPPM: skews[peer] ?? 0)
                out.append((h, peer, (p.offsetNs - truth).magnitude, p.errorBoundNs))
            }
        }
        return out
    }

    /// Linux gives per-send transmit timestamp keys from 6.13 on (`SCM_TS_OPT_ID`); before, the
    /// agents stamp send times themselves.
    static var kernelHasTransmitKeys: Bool {
        var u = utsname()
        uname(&u)
        let release = withUnsafeBytes(of: &u.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let parts = release.split(separator: ".").prefix(2).map { Int($0.prefix { $0.isNumber }) ?? 0 }
        return parts.count == 2 && (parts[0], parts[1]) >= (6, 13)
    }

    @Test("three agents with simulated clocks (offsets up to 20 s, skews up to 80 ppm): estimates within 100 µs of the truth (p99) and inside their own bounds (≥ 90 %), from the kernel's send times where it gives them; a peer whose clock jumps 50 ms is tracked again within 5 s")
    func estimatesMatchTheTruth() async throws {
        let lab = try Lab(hosts: 3, name: "clk")
        defer { lab.destroy() }
        for h in 1...3 {
            try lab.startAgent(h, flags: ["--test-hooks", "--sim-clock-offset", String(Self.offsets[h]!), "--sim-clock-skew", String(Self.skews[h]!)])
        }
        let ready = await waitUntil(timeout: 20, interval: 0.1) {
            let r = await read(lab)
            return r.results.count == 3 && r.results.values.allSatisfy { $0.peers.filter { $0.samples >= 8 }.count == 2 }
        }
        try #require(ready != nil, "every agent has estimates of both peers")
        // The warm-up `tools/bench clock` also gives: the skews are known after a few seconds.
        try await Task.sleep(nanoseconds: 5_000_000_000)

        var all: [(observer: Int, peer: Int, error: Double, bound: Double)] = []
        var last = Reading()
        var stamps: [String: [String]] = [:]
        for _ in 0..<30 {
            last = await read(lab)
            all += errors(last)
            for (h, result) in last.results {
                for p in result.peers { stamps["h\(h)→\(p.name)", default: []].append(p.sendStamps) }
            }
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        // Two-step exchanges over the lab's veth links: t1 from the kernel, t3 from follow-ups.
        // A reading gives the source of a link's last sample only (kept until its next, up to a
        // second later), and one follow-up delayed past its wait on a busy machine makes that
        // sample the agent's (CI saw one of six links so): over three seconds every link must be
        // the expected source in most readings, and the links together in nearly all.
        let expected = Self.kernelHasTransmitKeys ? "kernel" : "agent"
        let peers = last.results.values.flatMap(\.peers)
        let counters = peers.map { "\($0.sendStamps) kernel-stamped \($0.kernelStamped), follow-ups late \($0.followUpsMissed), implausible \($0.stampsImplausible)" }
        let share = stamps.mapValues { Double($0.filter { $0 == expected }.count) / Double($0.count) }
        let overall = Double(stamps.values.joined().filter { $0 == expected }.count) / Double(max(stamps.values.joined().count, 1))
        #expect(stamps.count == 6, "links read: \(stamps.keys.sorted())")
        #expect(share.values.allSatisfy { $0 > 0.5 } && overall >= 0.8, "readings that were \(expected): \(share); \(counters)")
        #expect(peers.allSatisfy { Self.kernelHasTransmitKeys ? $0.kernelStamped > 0 : $0.kernelStamped == 0 }, "\(counters)")
        #expect(all.count >= 150, "readings: \(all.count)")
        let sorted = all.map(\.error).sorted()
        let p99 = sorted[min(sorted.count - 1, sorted.count * 99 / 100)]
        let covered = Double(all.filter { $0.error <= $0.bound }.count) / Double(max(all.count, 1))
        #expect(p99 < 100_000, "p99 error \(p99 / 1000) µs")
        // Loose: the benchmark has measured 94–100 % on the clean link (goal 99 %).
        #expect(covered >= 0.90, "the bound covers \(covered * 100) % of the errors (p99 error \(p99 / 1000) µs)")

        // No agent took its peers' clocks for a step of its own while nothing jumped.
        func ownSteps(_ h: Int) async throws -> UInt64 {
            let s: AgentStatus = try await lab.request(h, "status")
            return s.counters["own_clock_steps"] ?? 0
        }
        for h in 1...3 { #expect(try await ownSteps(h) == 0, "h\(h) stepped its own clock") }

        // h3's device clock jumps 50 ms behind its agent's back: h3 notices from its two peers and
        // steps back, and the others' estimates of h3 stay within 1 ms of the truth (tracked
        // within 5 s whichever way it goes).
        let _: EmptyResult = try await lab.request(3, "sim_clock", SimClockRequest(jumpMs: 50))
        let tracked = await waitUntil(timeout: 5, interval: 0.1) {
            let e = errors(await read(lab)).filter { $0.peer == 3 }
            return e.count == 2 && e.allSatisfy { $0.error < 1_000_000 }
        }
        #expect(tracked != nil, "the others track h3's clock to within 1 ms within 5 s")
        let stepped = try await waitUntil(timeout: 5, interval: 0.1) { try await ownSteps(3) >= 1 }
        let h3Steps = try await ownSteps(3)
        #expect(stepped != nil && h3Steps == 1, "h3 stepped back once: \(h3Steps) step(s) after \(stepped.map { String(format: "%.1f s", $0) } ?? "over 5 s")")
        for h in 1...2 { #expect(try await ownSteps(h) == 0, "h\(h) stepped its own clock") }
    }
}
