import Foundation
import LockstepAgent
import LockstepTestKit
import Testing

/// Output latencies kept per player name: the file is range-checked when read back, a bad one is
/// a warning and not a crash, and it is written privately.
@Suite("Saved output latencies")
struct SavedLatenciesTests {
    @Test("a written table reads back the same")
    func roundTrip() {
        var l = SavedLatencies()
        let added = (l.set("living room tv", 80_000_000), l.set("kitchen", 0))
        #expect(added == (true, true))
        let (back, warning) = SavedLatencies.parse(l.text())
        #expect(back == l && warning == nil)
        #expect(back.list.latencies.map(\.name) == ["kitchen", "living room tv"])
        let forgot = l.set("kitchen", nil)
        #expect(forgot && l.byName["kitchen"] == nil)
    }

    @Test("entries out of range are skipped with one warning; a corrupt file is no latencies and a warning")
    func badInput() {
        let text = #"{"version":1,"output_latency_ns":{"tv":80000000,"far":10000000001,"neg":-1,"":5,"\#(String(repeating: "x", count: 33))":5}}"#
        let (l, warning) = SavedLatencies.parse(text)
        #expect(l.byName == ["tv": 80_000_000])
        #expect(warning?.contains("4 entries") == true)
        for corrupt in ["", "{", "[1]", #"{"version":2,"output_latency_ns":{}}"#, #"{"version":1,"output_latency_ns":{"tv":1.5}}"#, #"{"version":1,"output_latency_ns":{"tv":1e30}}"#] {
            let (none, w) = SavedLatencies.parse(corrupt)
            #expect(none.byName.isEmpty && w != nil, "\(corrupt)")
        }
    }

    @Test("the table holds a bounded number of names")
    func bounded() {
        var l = SavedLatencies()
        let all = (0..<SavedLatencies.maxEntries).allSatisfy { l.set("p\($0)", 1) }
        #expect(all)
        let oneMore = l.set("one more", 1), changed = l.set("p0", 2)
        #expect(!oneMore)
        #expect(changed, "an existing name may still change")
    }

    @Test("the file is written with mode 0600 and read back through the state directory")
    func file() async throws {
        try await withTemporaryDirectory { dir in
            let state = StateDirectory(path: dir)
            #expect(state.savedLatencies().0.byName.isEmpty && state.savedLatencies().warning == nil, "no file: no latencies, no warning")
            try state.saveLatencies(SavedLatencies(["tv": 80_000_000]))
            let attributes = try FileManager.default.attributesOfItem(atPath: dir + "/latencies.json")
            #expect((attributes[.posixPermissions] as? Int) == 0o600)
            #expect(state.savedLatencies().0.byName == ["tv": 80_000_000])
            try "not json".write(toFile: dir + "/latencies.json", atomically: true, encoding: .utf8)
            #expect(state.savedLatencies().warning != nil)
        }
    }
}
