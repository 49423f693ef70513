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

    /// Every agent of `lab` lists every other as reachable, within `timeout` s; nil if not.
    func allReachable(_ lab: Lab, hosts: Int, timeout: Double) async throws -> Double? {
        try await waitUntil(timeout: timeout, interval: 0.05) {
            for h in 1...hosts {
                let s = try await states(lab, h)
                if (1...hosts).filter({ $0 != h }).contains(where: { s["h\($0)"] != "reachable" }) { return false }
            }
            return true
        }
    }

    @Test("agents started before the host has a D-Bus or avahi-daemon find each other within 5 s of avahi starting, and tried no connection meanwhile")
    func avahiStartedAfterTheAgentsWithoutABus() async throws {
        let lab = try Lab(hosts: 2, avahi: false, name: "nobus")
        defer { lab.destroy() }
        for h in 1...2 { try lab.startAgent(h, environment: ["LOCKSTEP_LOG_LEVEL": "debug"]) }
        // Long enough for several of the loop's looks, and for a fixed 2 s retry to have tried 6 times.
        try await Task.sleep(nanoseconds: 12_000_000_000)
        for h in 1...2 { try lab.avahi(h, "start") }
        let found = try await allReachable(lab, hosts: 2, timeout: 15)
        #expect(found.map { $0 < 5 } == true, "found after \(found.map { String($0) } ?? "never") s")
        let log = try String(contentsOfFile: lab.hostDirectory(1) + "/agent.log", encoding: .utf8)
        let stillUnavailable = log.split(separator: "\n").filter { $0.contains("DNS-SD still unavailable") }
        #expect(stillUnavailable.isEmpty, "no attempt while the bus was missing: \(stillUnavailable.count) failed")
        print("avahi after the agents, no bus: found \(found ?? -1) s after avahi started")
    }

    @Test("agents started while the bus is up and avahi-daemon is not find each other within 5 s of avahi starting, though their attempts had backed off")
    func avahiStartedAfterTheAgentsOnABus() async throws {
        let lab = try Lab(hosts: 2, name: "noavahi")
        defer { lab.destroy() }
        for h in 1...2 { try lab.avahi(h, "stop") }
        for h in 1...2 { try lab.startAgent(h, environment: ["LOCKSTEP_LOG_LEVEL": "debug"]) }
        // Attempts at about 0, 2, 6 and 14 s; the next would be at 30 s.
        try await Task.sleep(nanoseconds: 17_000_000_000)
        let log = try String(contentsOfFile: lab.hostDirectory(1) + "/agent.log", encoding: .utf8)
        let failed = log.split(separator: "\n").filter { $0.contains("DNS-SD still unavailable") }.count
        #expect((2...4).contains(failed), "attempts back off: \(failed + 1) in 17 s, where every 2 s would be 9")
        for h in 1...2 { try lab.avahi(h, "start") }
        let found = try await allReachable(lab, hosts: 2, timeout: 20)
        #expect(found.map { $0 < 5 } == true, "found after \(found.map { String($0) } ?? "never") s: a new daemon is tried at once")
        print("avahi after the agents, on a bus: \(failed + 1) attempts in 17 s; found \(found ?? -1) s after avahi started")
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
