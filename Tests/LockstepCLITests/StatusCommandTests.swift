import Foundation
import LockstepTestKit
import LockstepPlayerProtocol
import Testing

@testable import LockstepCLI

@Suite("lockstep status")
struct StatusCommandTests {
    static let sample = AgentStatus(
        peerID: "00112233445566778899aabbccddeeff", name: "den", version: "0.1.0", playerProtocol: 1, peerProtocol: 1,
        socket: "/run/lockstep/agent.sock", stateDir: "/var/lib/lockstep", pid: 42, udpPort: 40123, incarnation: 7,
        uptimeNs: 3_723_000_000_000, hostTimeNs: 1, group: GroupInfo(name: "default", tag: "a1b2c3d4e5f60718", epoch: 2),
        peersReachable: 2, peersKnown: 3, players: 1, mdns: "running")

    @Test("the table shows every field a person needs, one per line, aligned")
    func table() {
        #expect(Status.render(Self.sample) == """
            name:        den
            peer id:     00112233445566778899aabbccddeeff
            group:       default (tag a1b2c3d4e5f60718, key epoch 2)
            version:     0.1.0 (peer protocol 1, player protocol 1)
            socket:      /run/lockstep/agent.sock
            state dir:   /var/lib/lockstep
            udp port:    40123
            pid:         42
            incarnation: 7
            uptime:      1h 02m
            peers:       2 reachable of 3 known
            players:     1
            mdns:        running
            """)
    }

    @Test("status --json prints the agent's status as JSON, and the table form agrees")
    func jsonAndTableFromARunningAgent() async throws {
        try await withTemporaryDirectory { dir in
            let (json, table) = try await withRunningAgent(in: dir, configure: { $0.name = "attic" }) { socket, _ in
                (try await runToolOffPool("lockstep", ["status", "--json", "--socket", socket]), try await runToolOffPool("lockstep", ["status", "--socket", socket]))
            }
            #expect(json.status == 0)
            let status = try JSONDecoder().decode(AgentStatus.self, from: Data(json.stdout.utf8))
            #expect(status.name == "attic")
            #expect(status.socket == dir + "/agent.sock")
            #expect(table.status == 0)
            #expect(table.stdout.contains("name:        attic"))
            #expect(table.stdout.contains("peer id:     \(status.peerID)"))
        }
    }

    @Test("without an agent, status fails with exit code 1 and one line saying how to start one")
    func noAgent() throws {
        let r = try runTool("lockstep", ["status", "--socket", "/tmp/lkt-nothing-here/agent.sock"])
        #expect(r.status == 1)
        #expect(r.stdout.isEmpty)
        #expect(r.stderr == "lockstep: no Lockstep agent is running on /tmp/lkt-nothing-here/agent.sock; start one with 'lockstepd' (or pass --socket)\n")
    }

    @Test("durations read the way people say them")
    func durations() {
        #expect(Human.duration(ns: 800) == "800ns")
        #expect(Human.duration(ns: 12_345) == "12µs")
        #expect(Human.duration(ns: 1_500_000) == "1.50ms")
        #expect(Human.duration(ns: 12_300_000_000) == "12.3s")
        #expect(Human.duration(ns: 184_000_000_000) == "3m 04s")
        #expect(Human.position(ns: 3_723_450_000_000) == "1:02:03.450")
    }
}
