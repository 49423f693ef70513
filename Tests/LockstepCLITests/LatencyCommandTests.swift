import Foundation
import LockstepTestKit
import Testing

@testable import LockstepCLI

@Suite("lockstep latency")
struct LatencyCommandTests {
    @Test("latencies are read with their unit (milliseconds without one), within 0 to 10 s")
    func parse() {
        #expect(Latency.parse("80ms") == 80_000_000)
        #expect(Latency.parse("80") == 80_000_000)
        #expect(Latency.parse("1.5s") == 1_500_000_000)
        #expect(Latency.parse("250us") == 250_000)
        #expect(Latency.parse("0") == 0)
        for bad in ["-1ms", "11s", "fast", "", "nanms", "1e400"] { #expect(Latency.parse(bad) == nil, "\(bad)") }
    }

    @Test("set, list and forget against a running agent")
    func setListForget() async throws {
        try await withTemporaryDirectory { dir in
            let (set, list, forget, bad) = try await withRunningAgent(in: dir) { socket, _ in
                (try await Self.lockstep(["latency", "set", "living room tv", "80ms", "--socket", socket]),
                 try await Self.lockstep(["latency", "list", "--socket", socket, "--json"]),
                 try await Self.lockstep(["latency", "forget", "living room tv", "--socket", socket]),
                 try await Self.lockstep(["latency", "set", "tv", "20s", "--socket", socket]))
            }
            #expect(set.status == 0 && set.stdout.contains("living room tv") && set.stdout.contains("80"))
            #expect(list.stdout.contains("\"output_latency_ns\" : 80000000"))
            #expect(forget.status == 0 && forget.stdout.contains("no output latencies kept"))
            #expect(bad.status == 2 && bad.stderr.contains("not a latency"))
        }
    }

    static func lockstep(_ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await runToolOffPool("lockstep", arguments)
    }
}
