import Testing

@testable import LockstepCore

/// A group member holding the key can speak under many peer ids from one machine. The mesh's
/// closure check must not let such a crowd overrule a direct estimate (review finding M4).
@Suite("Mesh clock against Sybils")
struct MeshSybilTests {
    static let me = PeerID(high: 0, low: 1)
    static let target = PeerID(high: 0, low: 2)
    static let honest = PeerID(high: 0, low: 3)
    static let now = LocalTime(ns: 100_000_000_000)

    static func estimate(_ offset: Double, bound: Double = 1_000) -> ClockEstimate {
        ClockEstimate(reference: now, offsetNs: offset, errorBoundNs: bound, hardBoundNs: 20_000, delay: .microseconds(40), sampleCount: 50)
    }

    static func report(_ offset: Double) -> ReportedEstimate {
        ReportedEstimate(reference: PeerTime(ns: now.ns), offsetNs: offset, errorBoundNs: 1_000, hardBoundNs: 20_000, delay: .microseconds(40), sampleCount: 50)
    }

    /// A mesh measuring the target (offset 0), an honest reporter agreeing, and `sybils` reporters
    /// measured at offset 0 that all report the target 5 ms off, from `hosts`.
    static func mesh(sybils: Int, hosts: (Int) -> String, vetted: Bool = true) -> MeshClock {
        var m = MeshClock(localID: me)
        m.updateLocal(peer: target, estimate: estimate(0))
        m.updateLocal(peer: honest, estimate: estimate(0))
        m.updateReport(from: honest, .init(vetted: true, host: "10.0.0.3"), target: target, estimate: report(0), receivedAt: now)
        for i in 0..<sybils {
            let id = PeerID(high: 9, low: UInt64(i))
            m.updateLocal(peer: id, estimate: estimate(0))
            m.updateReport(from: id, .init(vetted: vetted, host: hosts(i)), target: target, estimate: report(5_000_000), receivedAt: now)
        }
        return m
    }

    @Test("five ids on one machine reporting a forged offset are one vote: the direct estimate stays")
    func oneHostOneVote() {
        let m = Self.mesh(sybils: 5) { _ in "10.0.0.66" }
        let r = m.resolved(peer: Self.target, at: Self.now)
        #expect(r?.source == .direct)
        #expect(r?.disagreeingPaths == 5)
    }

    @Test("reporters discovery does not vouch for are not heard at all")
    func unvettedIgnored() {
        var m = MeshClock(localID: Self.me)
        m.updateLocal(peer: Self.honest, estimate: Self.estimate(0))
        #expect(m.updateReport(from: Self.honest, .init(vetted: false, host: "10.0.0.3"), target: Self.target, estimate: Self.report(0), receivedAt: Self.now) == .ignoredUnvetted)
    }

    @Test("the check can fail: two agreeing reporters on two machines against one supporter do overrule the direct estimate")
    func distinctHostsStillCount() {
        let m = Self.mesh(sybils: 3) { "10.0.0.\(70 + $0)" }
        let r = m.resolved(peer: Self.target, at: Self.now)
        if case .via = r?.source {} else { Issue.record("expected a two-hop path, got \(String(describing: r?.source))") }
    }
}
