import LockstepLab
import Testing

/// Issue 8's faults on real lab hosts, each on its own lab: the same scenarios `tools/bench
/// faults` reports, here with every check asserted (and what was measured in the message).
@Suite("Lab: faults", .enabled(if: Lab.isEnabled, "needs root and LOCKSTEP_LAB=1"), .serialized)
struct FaultLabTests {
    func expectAllChecks(_ outcome: FaultOutcome) {
        #expect(!outcome.checks.isEmpty, "\(outcome.fault): no checks ran")
        for c in outcome.checks {
            #expect(c.passed, "\(outcome.fault): \(c.name): measured \(c.measured)")
        }
    }

    @Test("kill -9 of an agent during playback: the others play on in step; restarted, it rejoins at the group position")
    func killAgent() async throws {
        expectAllChecks(try await Faults.killAgent())
    }

    @Test("a partition into two halves with commands on both sides heals to one state within 2 s, players back in step")
    func partition() async throws {
        expectAllChecks(try await Faults.partition())
    }

    @Test("20% loss, duplication and reordering on every link: every command reaches every peer, players stay in step")
    func lossyLinks() async throws {
        expectAllChecks(try await Faults.lossyLinks(seconds: 10))
    }

    @Test("a peer drifting at 500 ppm and a peer whose clock jumps by 1 s stay in step with the others")
    func clockJumpAndDrift() async throws {
        expectAllChecks(try await Faults.clockJumpAndDrift())
    }

    @Test("avahi-daemon restarted under running agents: no peer lost, players in step, discovery still works")
    func avahiRestart() async throws {
        expectAllChecks(try await Faults.avahiRestart())
    }

    @Test("a 50,000 datagrams/s flood and a 10 MB line: junk dropped and counted, memory bounded, warnings rate-limited, group in step")
    func flood() async throws {
        expectAllChecks(try await Faults.flood())
    }

    @Test("a device removed while up and one removed while down read nothing and are refused; a member away meanwhile gets the new key; the others play in step")
    func removeDevice() async throws {
        expectAllChecks(try await Faults.removeDevice())
    }

    @Test("two devices started from one copied state directory both say so, and take different incarnations")
    func clonedDevice() async throws {
        expectAllChecks(try await Faults.clonedDevice())
    }

    @Test("datagrams captured between two members and replayed after the receiver restarted: every session-sealed one is refused, the stopped sender does not look alive")
    func replayAfterRestart() async throws {
        expectAllChecks(try await Faults.replayAfterRestart())
    }

    @Test("a malicious member's crafted messages are refused and counted; no agent restarts; the group stays in step")
    func maliciousMember() async throws {
        expectAllChecks(try await Faults.maliciousMember())
    }

    @Test("a member asking for large answers from an unvalidated address gets at most 3× back; the group stays in step")
    func amplification() async throws {
        expectAllChecks(try await Faults.amplification())
    }
}
