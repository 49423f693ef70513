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

    @Test("a delay-step alarm shows beside the source; extreme offsets and ages render without trapping")
    func alarmAndExtremes() {
        var p = Self.peer(stamps: "kernel", missed: 0, refused: 0)
        p.delayStepNs = 5_000_000
        #expect(Clock.render(ClockResult(localTimeNs: 0, hostTimeNs: 0, peers: [p])).contains("direct (delay step +5.00ms)"))
        p.offsetNs = 1e300
        p.errorBoundNs = -.infinity
        p.hardBoundNs = .nan
        p.lastSampleAgeNs = .min
        let table = Clock.render(ClockResult(localTimeNs: 0, hostTimeNs: 0, peers: [p]))
        #expect(table.contains("-2562047h 47m ago"))
        #expect(table.contains("2562047h 47m"))
    }
}

@Suite("Terminal output")
struct TerminalTests {
    @Test("control characters, DEL, C1 controls and bidi overrides from the agent are shown escaped, not obeyed")
    func escapes() {
        #expect(Terminal.escaped("living room") == "living room")
        #expect(Terminal.escaped("\u{1B}]0;owned\u{07}") == "\\u{1B}]0;owned\\u{7}")
        #expect(Terminal.escaped("a\nb\u{7F}\u{9B}\u{202E}c") == "a\\u{A}b\\u{7F}\\u{9B}\\u{202E}c")
        #expect(Terminal.escaped("café ✓") == "café ✓")
    }

    @Test("an error from the agent that quotes an outside name is one escaped line")
    func errorsEscaped() {
        #expect(errorLine("no peer named \u{1B}]52;c;ZXZpbA==\u{07}") == "lockstep: no peer named \\u{1B}]52;c;ZXZpbA==\\u{7}\n")
        #expect(errorLine("a\nb").filter { $0 == "\n" }.count == 1)
    }

    @Test("a table escapes a peer name that carries an escape sequence")
    func tableCells() {
        let rendered = Table(headers: ["NAME"], rows: [["\u{1B}[2Jevil"]]).render()
        #expect(!rendered.unicodeScalars.contains { $0.value == 0x1B })
        #expect(rendered.contains("\\u{1B}[2Jevil"))
    }
}
