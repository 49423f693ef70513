import Foundation
import LockstepLab
import LockstepPeerWire
import LockstepPlayerProtocol
import Testing

/// Review finding M5 on real avahi-daemons: a host holding no key publishes seventy fake services
/// with the group's public tag and two dozen of another group before the agents start; the
/// agents still find each other, and a new member is reachable at the others within 3 s.
@Suite("Lab: strangers on mDNS", .enabled(if: Lab.isEnabled, "needs root and LOCKSTEP_LAB=1"), .serialized)
struct StrangerLabTests {
    @Test("seventy fake services with the group tag and 24 of another group keep no member out")
    func fakeServices() async throws {
        let lab = try Lab(hosts: 3, name: "junk")
        defer { lab.destroy() }
        try lab.startAgent(1)
        let status: AgentStatus = try await lab.request(1, "status")
        let tag = status.group.tag
        // The junk stands on h3, which holds no key yet.
        for i in 0..<24 {
            try lab.spawn(3, "foreign\(i)", ["avahi-publish", "-s", "f\(i)", "_lockstep._udp", "9", "v=\(PeerProtocol.version)", "g=0000000000000000", "id=\(String(format: "%032x", i + 1))"])
        }
        for i in 0..<70 {
            try lab.spawn(3, "fake\(i)", ["avahi-publish", "-s", "x\(i)", "_lockstep._udp", "9", "v=\(PeerProtocol.version)", "g=\(tag)", "id=\(String(format: "%032x", 0xfa4e_0000 + i))"])
        }
        try await Task.sleep(nanoseconds: 3_000_000_000)
        let seen = try lab.exec(1, ["avahi-browse", "-tp", "_lockstep._udp"]).split(separator: "\n").filter { $0.hasPrefix("+") }.count
        print("strangers lab: h1's avahi lists \(seen) services; fake0.log: \((try? String(contentsOfFile: lab.hostDirectory(3) + "/fake0.log", encoding: .utf8)) ?? "-")")
        try lab.startAgent(2)
        let pair = try await waitUntil(timeout: 15) { try await lab.allReachable(among: [1, 2]) }
        #expect(pair != nil, "h1 and h2 find each other among the junk")
        try lab.startAgent(3)
        let third = try await waitUntil(timeout: 10) { try await lab.allReachable(among: [1, 2, 3]) }
        #expect(third != nil && third! <= 3, "a new member is reachable everywhere within 3 s (took \(third.map { String($0) } ?? "forever") s)")
        let peers: PeersResult = try await lab.request(1, "peers")
        let strangers = peers.peers.filter { $0.state != "reachable" }.count
        #expect(strangers <= 16, "at most 16 strangers tracked (\(strangers))")
        print("strangers lab: pair after \(pair ?? -1) s, third after \(third ?? -1) s, \(strangers) strangers tracked on h1")
    }
}
