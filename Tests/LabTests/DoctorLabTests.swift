import Foundation
import LockstepClient
import LockstepLab
import LockstepPeerWire
import LockstepPlayerProtocol
import Testing

/// `lockstep doctor` on real hosts, each check broken on purpose: the doctor must name the cause.
@Suite("Lab: lockstep doctor", .enabled(if: Lab.isEnabled, "needs root and LOCKSTEP_LAB=1"), .serialized)
struct DoctorLabTests {
    @Test("a healthy pair passes; a device in another group, a stopped agent, a stopped avahi-daemon and multicast off are each named")
    func discoveryFaults() async throws {
        let lab = try Lab(hosts: 3, name: "doctor")
        defer { lab.destroy() }
        try lab.startAgent(1, flags: ["--peer-timeout", "1"])
        try lab.startAgent(2, flags: ["--peer-timeout", "1"])
        let stranger = JoinCode.make(GroupIdentity(name: "elsewhere", key: .random()))
        try lab.startAgent(3, flags: ["--peer-timeout", "1"], environment: ["LOCKSTEP_JOIN_CODE": stranger])
        #expect(try await waitUntil(timeout: 15) { try await lab.allReachable(among: [1, 2]) } != nil)

        // h1 and h2 play together: nothing fails there (h3, of another group, is only a warning).
        let healthy = try await doctor(lab, 1, until: { $0[.peers]?.finding.contains("another group") == true })
        for id in ["agent", "avahi", "multicast", "udp_port", "key_epochs"] {
            #expect(healthy[id]?.outcome == "ok", "\(id): \(healthy[id]?.finding ?? "missing")")
        }
        #expect(healthy.healthy)
        #expect(healthy[.peers]?.outcome == "warning")

        // h3 reaches nobody: the doctor says why (another group) and how to join.
        let alone = try await doctor(lab, 3, until: { $0[.peers]?.outcome == "failed" })
        let peers = try #require(alone[.peers])
        #expect(peers.finding.contains("h1") && peers.finding.contains("another group"), "\(peers.finding)")
        #expect(peers.fix?.contains("lockstep group join") == true)
        #expect(!alone.healthy)

        // No avahi-daemon on h2: named, with the command that starts it.
        try lab.avahi(2, "stop")
        let noAvahi = try await doctor(lab, 2, until: { $0[.avahi]?.outcome == "failed" })
        #expect(noAvahi[.avahi]?.finding.contains("avahi-daemon") == true, "\(noAvahi[.avahi]?.finding ?? "")")
        #expect(noAvahi[.avahi]?.fix?.contains("systemctl enable --now avahi-daemon") == true)
        #expect(noAvahi[.agent]?.outcome == "ok")

        // The agent on h3 stopped: named, and every check that needs it is skipped.
        try lab.kill(3)
        let stopped = try await doctor(lab, 3)
        #expect(stopped[.agent]?.outcome == "failed")
        #expect(stopped[.agent]?.finding.contains("no agent is running") == true, "\(stopped[.agent]?.finding ?? "")")
        #expect(stopped[.clock]?.outcome == "skipped")

        // Multicast off on h3's only interface.
        _ = try lab.exec(3, ["ip", "link", "set", "eth0", "multicast", "off"])
        let deaf = try await doctor(lab, 3)
        #expect(deaf[.multicast]?.outcome == "failed")
        #expect(deaf[.multicast]?.fix == "sudo ip link set eth0 multicast on")
    }

    @Test("a firewalled UDP port is named on both sides, and a slow jittery link as a large clock bound")
    func firewallAndBadLink() async throws {
        let lab = try Lab(hosts: 2, name: "doctorfw")
        defer { lab.destroy() }
        // `--impair`, not `--impair-to`: h2 found by DNS-SD may be reached over IPv6 link-local,
        // which h2's IPv4 address would not match (h2 is h1's only peer).
        try lab.startAgent(1, flags: ["--peer-timeout", "1", "--impair", "delay=30ms,jitter=25ms"])
        try lab.startAgent(2, flags: ["--peer-timeout", "1"])
        #expect(try await waitUntil(timeout: 15) { try await lab.allReachable(among: [1, 2]) } != nil)

        let jittery = try await doctor(lab, 1, until: { $0[.clock]?.outcome == "failed" })
        let clock = try #require(jittery[.clock])
        #expect(clock.outcome == "failed", "\(clock.finding)")
        #expect(clock.finding.contains("h2: clock error bound"), "\(clock.finding)")

        // A firewall on h2 drops its agent's port.
        let status: AgentStatus = try await lab.request(2, "status")
        _ = try lab.exec(2, ["sh", "-c", "nft add table inet lk && nft add chain inet lk input '{ type filter hook input priority 0; }' && nft add rule inet lk input udp dport \(status.udpPort) drop"])
        let walled = try await doctor(lab, 2, until: { $0[.udpPort]?.outcome == "failed" })
        #expect(walled[.udpPort]?.finding.contains("a firewall on this device") == true, "\(walled[.udpPort]?.finding ?? "")")
        #expect(walled[.udpPort]?.fix?.contains("udp dport \(status.udpPort) accept") == true)
        // h1 still hears h2, but h2 no longer answers it: h1 blames the firewall on h2.
        let other = try await doctor(lab, 1, until: { $0[.peers]?.outcome == "failed" })
        #expect(other[.peers]?.finding.contains("a firewall on h2") == true, "\(other[.peers]?.finding ?? "")")
    }

    @Test("a device removed from the group is named under key epochs; a member that was away during two rotations is not (it gets the key)")
    func staleKey() async throws {
        let lab = try Lab(hosts: 3, name: "doctorkey")
        defer { lab.destroy() }
        for h in 1...3 { try lab.startAgent(h, flags: ["--peer-timeout", "1"]) }
        #expect(try await waitUntil(timeout: 15) { try await lab.allReachable(among: [1, 2, 3]) } != nil)
        _ = try await waitUntil(timeout: 5, interval: 0.1) {
            let m: GroupMembersResult = try await lab.request(1, "group_members")
            return m.members.count == 3
        }
        try lab.kill(2)
        for _ in 0..<2 {
            let _: GroupShowResult = try await lab.request(1, "group_rotate")
        }
        let _: GroupMembersResult = try await lab.request(1, "group_remove", GroupRemoveRequest(device: "h3"))
        try lab.startAgent(2, flags: ["--peer-timeout", "1"])
        // Its first datagrams after the restart may have met the new key (counted, a warning at
        // most), then a member sent it the key: nothing fails.
        let away = try await doctor(lab, 2, until: { $0[.keyEpochs]?.outcome != "failed" && $0[.peers]?.outcome != "failed" })
        #expect(away[.keyEpochs]?.outcome != "failed", "\(away[.keyEpochs]?.finding ?? "")")
        let h2: AgentStatus = try await lab.request(2, "status")
        let h1: AgentStatus = try await lab.request(1, "status")
        #expect(h2.group.epoch == h1.group.epoch)
        let report = try await doctor(lab, 3, until: { $0[.keyEpochs]?.outcome == "failed" })
        let keys = try #require(report[.keyEpochs])
        #expect(keys.outcome == "failed", "\(keys.finding)")
        #expect(keys.finding.contains("was removed from the group"), "\(keys.finding)")
        #expect(keys.fix?.contains("lockstep group join") == true)
    }

    @Test("a suspended player and an unlikely latency setting are named under players")
    func players() async throws {
        let lab = try Lab(hosts: 2, name: "doctorpl")
        defer { lab.destroy() }
        for h in 1...2 { try lab.startAgent(h) }
        #expect(try await waitUntil(timeout: 15) { try await lab.allReachable(among: [1, 2]) } != nil)
        let ref = Lab.binDirectory + "/lockstep-refplayer"
        try lab.spawn(1, "ref", [ref, "--socket", lab.socket(1), "--name", "tv", "--output-latency-ms", "4000"])
        try lab.spawn(2, "ref", [ref, "--socket", lab.socket(2), "--name", "speaker"])
        #expect(try await waitUntil(timeout: 15) { try await lab.readyPlayers(on: 1) == 2 } != nil)
        let _: BeginSuspensionResult = try await lab.request(2, "suspend_player", SuspendPlayerRequest(reason: "interruption"))
        let report = try await doctor(lab, 1, until: { $0[.players]?.finding.contains("suspended") == true })
        let players = try #require(report[.players])
        #expect(players.outcome == "warning")
        #expect(players.finding.contains("speaker on h2 is suspended (interruption)"), "\(players.finding)")
        #expect(players.finding.contains("tv on h1 says its output latency is 4.0s"), "\(players.finding)")
    }

    // MARK: Running the doctor

    /// `lockstep doctor --json` as printed (LabTests read the JSON, as a script would).
    struct Report: Decodable {
        struct Check: Decodable {
            var id: String
            var outcome: String
            var finding: String
            var fix: String?
        }
        var checks: [Check]
        var healthy: Bool

        subscript(id: String) -> Check? { checks.first { $0.id == id } }
        subscript(id: ID) -> Check? { self[id.rawValue] }

        enum ID: String {
            case agent, avahi, multicast, udpPort = "udp_port", peers, keyEpochs = "key_epochs", clock, players
        }
    }

    /// Runs the doctor inside `host` against its agent until `condition` holds (10 s at most);
    /// returns the last report.
    func doctor(_ lab: Lab, _ host: Int, until condition: (Report) -> Bool = { _ in true }) async throws -> Report {
        var last: Report?
        _ = try await waitUntil(timeout: 10, interval: 0.5) {
            // The doctor exits 1 when a check fails; the report is what matters here.
            let out = try lab.exec(host, ["sh", "-c", "\"$0\" doctor --json --socket \"$1\"; true", Lab.binDirectory + "/lockstep", lab.socket(host)])
            let report = try JSONDecoder().decode(Report.self, from: Data(out.utf8))
            last = report
            return condition(report)
        }
        return try #require(last)
    }
}
