import Foundation
import LockstepLab
import LockstepPlayerProtocol
import LockstepPeerWire
import Testing

/// Discovery and membership on real hosts: network namespaces, each with its own avahi-daemon.
@Suite("Lab: discovery", .enabled(if: Lab.isEnabled, "needs root and LOCKSTEP_LAB=1"), .serialized)
struct DiscoveryLabTests {
    func states(_ lab: Lab, _ host: Int) async throws -> [String: String] {
        let r: PeersResult = try await lab.request(host, "peers")
        return Dictionary(r.peers.map { ($0.name, $0.state) }, uniquingKeysWith: { a, _ in a })
    }

    @Test("five agents find each other; a killed agent is lost within 3.5 s and back within 3 s of its restart; another group is never listed")
    func fiveHosts() async throws {
        let lab = try Lab(hosts: 6, name: "disc")
        defer { lab.destroy() }
        for h in 1...5 { try lab.startAgent(h) }
        // h6 runs an agent of another group on the same LAN.
        try lab.startAgent(6, environment: ["LOCKSTEP_JOIN_CODE": JoinCode.make(GroupIdentity(name: "other", key: .random()))])

        let all = try await waitUntil(timeout: 15) {
            for h in 1...5 {
                let s = try await states(lab, h)
                let others = (1...5).filter { $0 != h }.map { "h\($0)" }
                if !others.allSatisfy({ s[$0] == "reachable" }) { return false }
            }
            return true
        }
        #expect(all != nil, "every agent lists the other four as reachable")

        try lab.kill(3, signal: "KILL")
        let lost = try await waitUntil(timeout: 6, interval: 0.05) {
            for h in [1, 2, 4, 5] where try await states(lab, h)["h3"] != "lost" { return false }
            return true
        }
        #expect(lost != nil && lost! <= 3.5, "lost by all within 3.5 s (took \(lost.map { String($0) } ?? "forever") s)")

        try lab.startAgent(3, wait: false)
        let back = try await waitUntil(timeout: 6, interval: 0.05) {
            for h in [1, 2, 4, 5] where try await states(lab, h)["h3"] != "reachable" { return false }
            return true
        }
        #expect(back != nil && back! <= 3.0, "reachable again within 3 s (took \(back.map { String($0) } ?? "forever") s)")

        print("discovery lab: all reachable after \(all ?? -1) s, lost after \(lost ?? -1) s, back after \(back ?? -1) s")
        for h in 1...5 {
            let s = try await states(lab, h)
            #expect(s["h6"] == nil, "h\(h) never lists the agent of another group")
        }
        let stranger: PeersResult = try await lab.request(6, "peers")
        #expect(stranger.peers.isEmpty, "the other group's agent lists nobody")
        let status: AgentStatus = try await lab.request(1, "status")
        #expect(status.mdns == "running")
    }

    @Test("without any avahi-daemon, static peers find each other and the agent says mDNS is unavailable")
    func staticPeersWithoutAvahi() async throws {
        let lab = try Lab(hosts: 3, avahi: false, name: "static")
        defer { lab.destroy() }
        let a1 = try lab.address(1), a2 = try lab.address(2)
        try lab.startAgent(1, flags: ["--port", "4400"])
        try lab.startAgent(2, flags: ["--port", "4400", "--peer", "\(a1):4400"])
        try lab.startAgent(3, flags: ["--port", "4400", "--peer", "\(a1):4400", "--peer", "\(a2):4400"])
        let all = try await waitUntil(timeout: 10) {
            for h in 1...3 {
                let s = try await states(lab, h)
                if (1...3).filter({ $0 != h }).contains(where: { s["h\($0)"] != "reachable" }) { return false }
            }
            return true
        }
        #expect(all != nil, "each agent lists both others as reachable (h1 learns of the others from their datagrams)")
        let status: AgentStatus = try await lab.request(1, "status")
        #expect(status.mdns.hasPrefix("unavailable"))
        let log = try String(contentsOfFile: lab.hostDirectory(1) + "/agent.log", encoding: .utf8)
        let warnings = log.split(separator: "\n").filter { $0.contains("mDNS discovery unavailable") }
        #expect(warnings.count == 1, "one line says avahi is missing and how to start it")
        #expect(warnings.first?.contains("avahi-daemon") == true)
    }

    @Test("without any avahi-daemon, agents given only one member's address each reach every other: the member tells them where the rest are")
    func introducedPeersWithoutAvahi() async throws {
        let lab = try Lab(hosts: 5, avahi: false, name: "intro")
        defer { lab.destroy() }
        let a1 = try lab.address(1)
        try lab.startAgent(1, flags: ["--port", "4400"])
        for h in 2...5 { try lab.startAgent(h, flags: ["--port", "4400", "--peer", "\(a1):4400"]) }
        let all = try await waitUntil(timeout: 10) {
            for h in 1...5 {
                let s = try await states(lab, h)
                if (1...5).filter({ $0 != h }).contains(where: { s["h\($0)"] != "reachable" }) { return false }
            }
            return true
        }
        #expect(all != nil, "each agent lists the four others as reachable: h2…h5 knew only h1")
        #expect(all.map { $0 < 5 } == true, "within 5 s (took \(all.map { String($0) } ?? "forever") s)")
        print("introduced peers lab: all reachable after \(all ?? -1) s")
    }
}
