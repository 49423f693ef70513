import Foundation
import LockstepTestKit
import Testing

/// `lockstep web code` reads the pairing code the agent's web endpoint keeps beside its socket.
@Suite("lockstep web code")
struct WebCommandTests {
    @Test("prints the code kept beside the socket; without one, or with something else there, says what is wrong")
    func code() async throws {
        try await withTemporaryDirectory { dir in
            let socket = dir + "/agent.sock"
            let missing = try await runToolOffPool("lockstep", ["web", "code", "--socket", socket])
            #expect(missing.status == 1 && missing.stderr.contains("is lockstepd running with --web"))
            try "482913\n".write(toFile: socket + ".web-code", atomically: true, encoding: .utf8)
            let shown = try await runToolOffPool("lockstep", ["web", "code", "--socket", socket])
            #expect(shown.status == 0 && shown.stdout == "482913\n")
            try "\u{1b}]52;c;x\u{7}\n".write(toFile: socket + ".web-code", atomically: true, encoding: .utf8)
            let junk = try await runToolOffPool("lockstep", ["web", "code", "--socket", socket])
            #expect(junk.status == 1 && junk.stderr.contains("does not hold a pairing code"))
        }
    }
}
