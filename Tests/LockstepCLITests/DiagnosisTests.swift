import Foundation
import LockstepPlayerProtocol
import Testing

@testable import LockstepCLI

/// The doctor's judgement on fixed observations: each broken device gets its cause and its fix.
@Suite("lockstep doctor: diagnosis")
struct DiagnosisTests {
    static let tag = "a1b2c3d4e5f60718"
    static let me = "00112233445566778899aabbccddeeff"
    static let eth0 = NetworkInterface(name: "eth0", up: true, loopback: false, multicast: true, addresses: ["10.0.0.1", "fe80::1"])
    static let lo = NetworkInterface(name: "lo", up: true, loopback: true, multicast: false, addresses: ["127.0.0.1"])

    static func status(counters: [String: UInt64] = ["received": 100], mdns: String = "running") -> AgentStatus {
        AgentStatus(
            peerID: me, name: "den", version: "0.2.0", playerProtocol: 1, peerProtocol: 1, socket: "/run/lockstep/agent.sock",
            stateDir: "/var/lib/lockstep", pid: 42, udpPort: 7651, incarnation: 7, uptimeNs: 60_000_000_000, hostTimeNs: 1,
            group: GroupInfo(name: "home", tag: tag, epoch: 3), peersReachable: 1, peersKnown: 1, players: 0, mdns: mdns, counters: counters)
    }

    static func peer(_ name: String, id: String, state: String = "reachable", heardAgo: Int64? = 100_000_000) -> PeerInfo {
        PeerInfo(peerID: id, name: name, state: state, addresses: ["10.0.0.2:7651"], preferred: "10.0.0.2:7651", stateAgeNs: 5_000_000_000, lastHeardAgoNs: heardAgo, incarnation: 1, sources: ["mdns"])
    }

    static func clock(_ name: String, id: String, bound: Double = 2_000, age: Int64 = 200_000_000, trusted: Bool = true) -> ClockInfo {
        ClockInfo(
            peerID: id, name: name, offsetNs: 10, errorBoundNs: bound, hardBoundNs: bound, delayNs: 40_000, skewPPM: 1, samples: 50, lastSampleAgeNs: age,
            source: "direct", trusted: trusted, closureErrorNs: trusted ? nil : 3_000_000, worstClosureErrorNs: nil, worstClosureToleranceNs: nil,
            paths: 1, lost: 0, rejected: 0, sendStamps: "kernel", kernelStamped: 50, followUpsMissed: 0, stampsImplausible: 0)
    }

    static let kitchen = "ffeeddccbbaa99887766554433221100"

    /// A device that plays with one peer, every check fine.
    static func healthy() -> DoctorObservations {
        DoctorObservations(
            socketPath: "/run/lockstep/agent.sock", agent: .answered(status()), statusLater: status(counters: ["received": 120]), seconds: 2,
            peers: PeersResult(peers: [peer("kitchen", id: kitchen)]), clock: ClockResult(localTimeNs: 0, hostTimeNs: 0, peers: [clock("kitchen", id: kitchen)]),
            players: PlayersResult(players: []),
            browse: .services([MDNSBrowser.Service(interface: "eth0", name: "kitchen", address: "10.0.0.2", port: 7651, txt: ["id": kitchen, "g": tag, "v": "1", "n": "kitchen"])]),
            interfaces: [lo, eth0])
    }

    @Test("a device that plays with its peer passes every check it can make, in order")
    func healthyDevice() {
        let report = Diagnosis().report(Self.healthy())
        #expect(report.checks.map(\.id) == DoctorReport.ID.allCases)
        #expect(report.checks.map(\.outcome) == [.ok, .ok, .ok, .ok, .ok, .ok, .ok, .skipped])
        #expect(report.healthy)
        #expect(report[.peers]?.finding == "1 peer reachable: kitchen")
    }

    @Test("no agent on the system socket: start the service; every later check is skipped")
    func agentStopped() {
        var o = Self.healthy()
        o.agent = .notRunning(socketExists: false)
        let report = Diagnosis().report(o)
        #expect(report[.agent]?.outcome == .failed)
        #expect(report[.agent]?.fix == "sudo systemctl enable --now lockstep; if it does not stay up: journalctl -u lockstep -e")
        #expect(report.checks.suffix(5).allSatisfy { $0.outcome == .skipped })
        #expect(!report.healthy)
    }

    @Test("a socket left behind means a crashed agent, and a refused one means joining the lockstep group")
    func agentDeadOrForbidden() {
        var o = Self.healthy()
        o.agent = .notRunning(socketExists: true)
        #expect(Diagnosis().report(o)[.agent]?.finding.contains("stopped without cleaning up") == true)
        o.agent = .permissionDenied
        #expect(Diagnosis().report(o)[.agent]?.fix == "sudo adduser $USER lockstep, then log out and in again")
    }

    @Test("avahi-daemon down, as the agent or avahi-browse sees it, fails with the command that starts it")
    func noAvahi() {
        var o = Self.healthy()
        o.agent = .answered(Self.status(mdns: "unavailable: avahi-daemon is not running (browse: unknown)"))
        #expect(Diagnosis().report(o)[.avahi]?.finding == "the agent cannot use avahi-daemon: avahi-daemon is not running (browse: unknown); it finds no peer by mDNS")
        o = Self.healthy()
        o.browse = .daemonUnavailable("Failed to create client object: Daemon not running")
        let check = Diagnosis().report(o)[.avahi]
        #expect(check?.outcome == .failed)
        #expect(check?.fix == "sudo systemctl enable --now avahi-daemon (package avahi-daemon)")
    }

    @Test("an interface with multicast off is named with the command that turns it on")
    func multicastOff() {
        var o = Self.healthy()
        o.interfaces = [Self.lo, NetworkInterface(name: "wlan0", up: true, loopback: false, multicast: false, addresses: ["192.168.1.5"])]
        let check = Diagnosis().report(o)[.multicast]
        #expect(check?.outcome == .failed)
        #expect(check?.fix == "sudo ip link set wlan0 multicast on")
    }

    @Test("peers seen but nothing ever received: the firewall here, and the peers are not blamed")
    func firewallHere() {
        var o = Self.healthy()
        o.agent = .answered(Self.status(counters: ["received": 0]))
        o.statusLater = Self.status(counters: ["received": 0])
        o.peers = PeersResult(peers: [Self.peer("kitchen", id: Self.kitchen, state: "resolved", heardAgo: nil)])
        let report = Diagnosis().report(o)
        #expect(report[.udpPort]?.outcome == .failed)
        #expect(report[.udpPort]?.finding == "nothing arrives on udp/7651 from the 1 peer seen (kitchen), not one datagram since the agent started: a firewall on this device drops it")
        #expect(report[.udpPort]?.fix?.hasPrefix("allow it in: sudo nft add rule inet filter input udp dport 7651 accept") == true)
        #expect(report[.peers]?.finding == "kitchen (10.0.0.2:7651) does not answer: nothing reaches this device (see udp port)")
    }

    @Test("a peer heard whose answers stopped is blamed on a firewall on that peer")
    func firewallThere() {
        var o = Self.healthy()
        o.clock = ClockResult(localTimeNs: 0, hostTimeNs: 0, peers: [Self.clock("kitchen", id: Self.kitchen, age: 9_000_000_000)])
        let check = Diagnosis().report(o)[.peers]
        #expect(check?.outcome == .failed)
        #expect(check?.finding.contains("kitchen is heard but has not answered this device for 9.0s") == true)
        #expect(check?.finding.contains("a firewall on kitchen") == true)
    }

    @Test("a device of another group seen by avahi is named; it fails only when nothing else is reachable")
    func anotherGroup() {
        var o = Self.healthy()
        let stranger = MDNSBrowser.Service(interface: "eth0", name: "attic", address: "10.0.0.9", port: 5000, txt: ["id": "99" + String(repeating: "0", count: 30), "g": "0000000000000000", "v": "1", "n": "attic"])
        o.browse = .services([stranger])
        #expect(Diagnosis().report(o)[.peers]?.outcome == .warning)
        o.peers = PeersResult(peers: [])
        let check = Diagnosis().report(o)[.peers]
        #expect(check?.outcome == .failed)
        #expect(check?.finding == "attic at 10.0.0.9 runs Lockstep in another group (tag 0000000000000000; this device: \(Self.tag)): the two never play together")
        #expect(check?.fix == "to join its group: on attic run lockstep group invite, then here lockstep group join CODE")
    }

    @Test("datagrams refused for their key while the doctor looks fail key epochs; old ones only warn, unless no device seen answers")
    func keyEpochs() {
        var o = Self.healthy()
        o.statusLater = Self.status(counters: ["received": 120, "dropped_unknown_key_epoch": 4])
        let check = Diagnosis().report(o)[.keyEpochs]
        #expect(check?.outcome == .failed)
        #expect(check?.finding.hasPrefix("4 datagrams in the last 2.0 s under a key this agent does not hold (key epoch 3 of group 'home')") == true)
        o.agent = .answered(Self.status(counters: ["received": 100, "dropped_unknown_key_epoch": 4]))
        #expect(Diagnosis().report(o)[.keyEpochs]?.outcome == .warning)
        // Old ones, and no device seen answers: removed (members stopped probing it).
        o.peers = PeersResult(peers: [Self.peer("kitchen", id: Self.kitchen, state: "lost")])
        let removed = Diagnosis().report(o)[.keyEpochs]
        #expect(removed?.outcome == .failed)
        #expect(removed?.finding.contains("none of the 1 device seen answers") == true)
        #expect(removed?.finding.contains("was removed from the group") == true)
    }

    @Test("another device using this device's key fails key epochs and says how to part them; removed devices knocking are only noted")
    func clonesAndRemoved() {
        var o = Self.healthy()
        o.statusLater = Self.status(counters: ["received": 120, "dropped_clone": 2])
        let check = Diagnosis().report(o)[.keyEpochs]
        #expect(check?.outcome == .failed)
        #expect(check?.finding.contains("another device uses this device's key") == true)
        #expect(check?.fix?.contains("lockstep group reset-identity") == true)
        o.statusLater = Self.status(counters: ["received": 120, "dropped_removed_member": 7])
        let knocking = Diagnosis().report(o)[.keyEpochs]
        #expect(knocking?.outcome == .ok)
        #expect(knocking?.finding.contains("7 datagrams from removed devices refused") == true)
    }

    @Test("a clock bound over the limit fails, a quarter of it warns, and a contradicted estimate fails")
    func clockQuality() {
        var o = Self.healthy()
        o.clock = ClockResult(localTimeNs: 0, hostTimeNs: 0, peers: [Self.clock("kitchen", id: Self.kitchen, bound: 6_000_000)])
        let check = Diagnosis().report(o)[.clock]
        #expect(check?.outcome == .failed)
        #expect(check?.finding == "kitchen: clock error bound ±6.00ms (limit 2.00ms), round trip 40µs")
        o.clock = ClockResult(localTimeNs: 0, hostTimeNs: 0, peers: [Self.clock("kitchen", id: Self.kitchen, bound: 600_000)])
        #expect(Diagnosis().report(o)[.clock]?.outcome == .warning)
        o.clock = ClockResult(localTimeNs: 0, hostTimeNs: 0, peers: [Self.clock("kitchen", id: Self.kitchen, trusted: false)])
        #expect(Diagnosis().report(o)[.clock]?.finding.contains("the other peers contradict its direct clock estimate by 3.00ms") == true)
    }

    @Test("a player off the timeline fails; a suspended one and an unlikely latency warn")
    func players() {
        func player(_ name: String, sync: Int64?, suspended: [String] = [], latency: Int64 = 0) -> ParticipantWithItem {
            ParticipantWithItem(
                participant: ParticipantView(peerID: Self.me, peerName: "den", playerID: 1, name: name, readiness: .ready, suspensionReasons: suspended, local: true),
                item: "film", solo: false, outputLatencyNs: latency, startLatencyNs: 0, syncErrorNs: sync)
        }
        var o = Self.healthy()
        o.players = PlayersResult(players: [player("tv", sync: 45_000_000)])
        #expect(Diagnosis().report(o)[.players]?.finding == "tv on den is 45.0ms off the group timeline")
        o.players = PlayersResult(players: [player("tv", sync: 100_000, suspended: ["stall"]), player("bt", sync: 0, latency: 3_000_000_000)])
        let check = Diagnosis().report(o)[.players]
        #expect(check?.outcome == .warning)
        #expect(check?.finding == "tv on den is suspended (stall): the others play on without it; bt on den says its output latency is 3.0s and start latency 0ns: is that right?")
    }

    @Test("the text report marks each check and indents its fix; JSON carries the same and whether it is healthy")
    func rendering() throws {
        var o = Self.healthy()
        o.agent = .notRunning(socketExists: false)
        let report = Diagnosis().report(o)
        #expect(report.render().hasPrefix("""
            FAIL  agent: no agent is running: nothing at /run/lockstep/agent.sock
                  fix: sudo systemctl enable --now lockstep; if it does not stay up: journalctl -u lockstep -e
            ok    avahi-daemon:
            """))
        let json = try JSONSerialization.jsonObject(with: Data(jsonText(report).utf8)) as? [String: Any]
        #expect(json?["healthy"] as? Bool == false)
        #expect((json?["checks"] as? [[String: Any]])?.first?["id"] as? String == "agent")
        #expect(try JSONDecoder().decode(DoctorReport.self, from: Data(jsonText(report).utf8)) == report)
    }

    @Test("avahi-browse's parsable lines: resolved entries only, escaped names and TXT strings decoded")
    func browseParsing() {
        let text = """
            +;eth0;IPv4;Living\\032Room;_lockstep._udp;local
            =;eth0;IPv4;Living\\032Room;_lockstep._udp;local;vm-2.local;10.77.0.2;40123;"v=1" "n=Living Room" "id=\(Self.kitchen)" "g=\(Self.tag)"
            =;eth0;IPv6;odd;_lockstep._udp;local;vm-3.local;fe80::1;5000;"n=say \\"hi\\"\\059" "empty"
            """
        let services = MDNSBrowser.parse(text)
        #expect(services.count == 2)
        #expect(services[0] == MDNSBrowser.Service(interface: "eth0", name: "Living Room", address: "10.77.0.2", port: 40123, txt: ["v": "1", "n": "Living Room", "id": Self.kitchen, "g": Self.tag]))
        #expect(services[1].txt == ["n": "say \"hi\";", "empty": ""])
    }

    @Test("without --socket, the CLI uses the system agent's socket when only it exists")
    func socketFallback() {
        let env = ["XDG_RUNTIME_DIR": "/run/user/1000"]
        #expect(CommonOptions.defaultSocketPath(environment: env, exists: { $0 == "/run/lockstep" }) == "/run/lockstep/agent.sock")
        #expect(CommonOptions.defaultSocketPath(environment: env, exists: { _ in false }) == (getuid() == 0 ? "/run/lockstep/agent.sock" : "/run/user/1000/lockstep/agent.sock"))
        #expect(CommonOptions.defaultSocketPath(environment: env, exists: { _ in true }) == (getuid() == 0 ? "/run/lockstep/agent.sock" : "/run/user/1000/lockstep/agent.sock"))
        #expect(CommonOptions.defaultSocketPath(environment: env.merging(["LOCKSTEP_SOCKET": "/x.sock"]) { $1 }, exists: { _ in true }) == "/x.sock")
    }
}
