import LockstepPlayerProtocol
import Testing

@testable import LockstepCLI

@Suite("lockstep clock")
struct ClockCommandTests {
    static func peer(stamps: String, missed: UInt64, refused: UInt64) -> ClockInfo {
        ClockInfo(
            peerID: "00112233445566778899aabbccddeeff", name: "den", offsetNs: 1_500, errorBoundNs: 4_000, hardBoundNs: 9_000,
            delayNs: 18_000, skewPPM: -12.5, samples: 100, lastSampleAgeNs: 120_000_000, source: "direct", trusted: true,
            closureErrorNs: nil, worstClosureErrorNs: nil, worstClosureToleranceNs: nil, paths: 0, lost: 0, rejected: 0,
            sendStamps: stamps, kernelStamped: 90, followUpsMissed: missed, stampsImplausible: refused)
    }

    @Test("STAMPS says kernel or agent, and counts late follow-ups and refused transmit times only when there are some")
    func stampsColumn() {
        #expect(Clock.stamps(Self.peer(stamps: "kernel", missed: 0, refused: 0)) == "kernel")
        #expect(Clock.stamps(Self.peer(stamps: "agent", missed: 3, refused: 0)) == "agent (3 follow-ups late)")
        #expect(Clock.stamps(Self.peer(stamps: "kernel", missed: 2, refused: 1)) == "kernel (2 follow-ups late, 1 refused)")
        let table = Clock.render(ClockResult(localTimeNs: 0, hostTimeNs: 0, peers: [Self.peer(stamps: "agent", missed: 3, refused: 0)]))
        #expect(table.contains("agent (3 follow-ups late)"))
    }
}
