import Foundation
import LockstepClient
import LockstepTestKit
import Testing

/// Replays `Protocol/vectors/player-session.jsonl` against a real agent: the protocol as a
/// player sees it, request by request and event by event.
@Suite("Player session vector")
struct PlayerSessionVectorTests {
    static let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Protocol/vectors/player-session.jsonl")

    /// True if every key of `expected` is in `actual` with an equal value ("*" matches anything).
    static func matches(_ expected: Any, _ actual: Any?) -> Bool {
        if let s = expected as? String, s == "*" { return actual != nil }
        switch (expected, actual) {
        case (let e as [String: Any], let a as [String: Any]):
            return e.allSatisfy { matches($0.value, a[$0.key]) }
        case (let e as [Any], let a as [Any]):
            return e.count == a.count && zip(e, a).allSatisfy { matches($0, $1) }
        case (let e as NSNumber, let a as NSNumber):
            return e == a
        case (let e as String, let a as String):
            return e == a
        default:
            return false
        }
    }

    @Test("a player's whole session goes exactly as the vector says")
    func replay() async throws {
        let lines = try String(contentsOf: Self.file, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(lines.count > 30)
        try await withTemporaryDirectory { dir in
            try await withRunningAgent(in: dir) { socket, _ in
                let steps = try lines.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
                let s = try RawSocket(path: socket)
                var pending: [String] = []
                for (n, step) in steps.enumerated() {
                    if let send = step["send"] {
                        let data = try JSONSerialization.data(withJSONObject: send)
                        s.write(String(decoding: data, as: UTF8.self) + "\n")
                    } else if let raw = step["send_raw"] as? String {
                        s.write(raw)
                    } else if let expect = step["expect"] {
                        // The next received line that has the same kind (reply id or event name).
                        var found = false
                        // An upper bound only; the last look after it still reads what arrived.
                        let deadline = Date().addingTimeInterval(20)
                        var lastLook = false
                        while !found && !lastLook {
                            lastLook = Date() >= deadline
                            if pending.isEmpty { pending += await s.readLines(1, timeout: 0.2) }
                            guard !pending.isEmpty else { continue }
                            lastLook = false
                            let line = pending.removeFirst()
                            let object = try JSONSerialization.jsonObject(with: Data(line.utf8))
                            if Self.matches(expect, object) {
                                found = true
                            } else if let e = expect as? [String: Any], let o = object as? [String: Any], e["event"] == nil, o["event"] == nil {
                                Issue.record("step \(n): expected \(expect), got \(line)")
                                return
                            }
                            // Other events (e.g. participant updates) may come between; skip them.
                        }
                        #expect(found, "step \(n): \(expect) never came")
                        if !found { return }
                    }
                }
            }
        }
    }
}
