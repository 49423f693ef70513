import Foundation
import LockstepClient
import LockstepCore
import LockstepTestKit
import LockstepPlayerProtocol
import Testing

/// Bad input on the player socket: an error reply or a clean disconnect, the agent unaffected.
// One test at a time: RawSocket does blocking writes, and two of these tests at once (a 10 MB
// write, 65 connections) could hold both threads of a 2-core machine's cooperative pool, which
// the in-process agents need to read them.
@Suite("Player socket robustness", .serialized)
struct PlayerSocketTests {
    func reply(_ line: String) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] ?? [:]
    }

    func errorCode(_ line: String) throws -> String? {
        (try reply(line)["error"] as? [String: Any])?["code"] as? String
    }

    @Test("malformed lines, unknown types and bad fields get one-line errors; the connection keeps working")
    func badLines() async throws {
        try await withTemporaryDirectory { dir in
            try await withRunningAgent(in: dir) { socket, _ in
                let s = try RawSocket(path: socket)
                s.write("this is not json\n")
                s.write("[1,2,3]\n")
                s.write("{\"type\":\"teleport\",\"request_id\":1}\n")
                s.write("{\"type\":\"command\",\"request_id\":2,\"action\":\"seek\"}\n")
                s.write("{\"type\":\"hello\",\"request_id\":\"h\",\"protocol\":\"one\"}\n")
                s.write("{\"type\":\"load\",\"request_id\":3,\"item\":\"x\"}\n")
                s.write("{\"type\":\"status\",\"request_id\":4}\n")
                let lines = await s.readLines(7)
                try #require(lines.count == 7)
                #expect(try errorCode(lines[0]) == "malformed")
                #expect(try errorCode(lines[1]) == "malformed")
                #expect(try errorCode(lines[2]) == "unknown_type")
                // A seek without a position: the request is incomplete, whatever the state.
                #expect(try errorCode(lines[3]) == "invalid_field")
                #expect(try errorCode(lines[4]) == "invalid_field")
                #expect((try reply(lines[4])["error"] as? [String: Any])?["message"] as? String == "field protocol must be an integer")
                #expect(try errorCode(lines[5]) == "not_a_player")
                #expect(try reply(lines[6])["ok"] as? Bool == true)
                #expect(lines.allSatisfy { !$0.contains("\n") })
            }
        }
    }

    @Test("readiness, position reports and suspensions before load are invalid_state")
    func beforeLoad() async throws {
        try await withTemporaryDirectory { dir in
            try await withRunningAgent(in: dir) { socket, _ in
                let s = try RawSocket(path: socket)
                let now = MonotonicClock.read()
                s.write("{\"type\":\"hello\",\"request_id\":1,\"protocol\":1,\"role\":\"player\"}\n")
                s.write("{\"type\":\"ready\",\"request_id\":2}\n")
                s.write("{\"type\":\"buffering\",\"request_id\":3}\n")
                s.write("{\"type\":\"position\",\"request_id\":4,\"position_ns\":0,\"host_time_ns\":\(now)}\n")
                s.write("{\"type\":\"begin_suspension\",\"request_id\":5,\"reason\":\"interruption\"}\n")
                // A bad number is named before the state is looked at.
                s.write("{\"type\":\"position\",\"request_id\":6,\"position_ns\":1.5,\"host_time_ns\":\(now)}\n")
                let lines = await s.readLines(6)
                try #require(lines.count == 6)
                #expect(try reply(lines[0])["ok"] as? Bool == true)
                for line in lines[1...4] {
                    #expect(try errorCode(line) == "invalid_state", "\(line)")
                }
                #expect(try errorCode(lines[5]) == "invalid_field")
            }
        }
    }

    @Test("an oversized line is refused and dropped, and the next line is served")
    func oversized() async throws {
        try await withTemporaryDirectory { dir in
            try await withRunningAgent(in: dir) { socket, _ in
                let s = try RawSocket(path: socket)
                s.write("{\"type\":\"status\",\"pad\":\"" + String(repeating: "x", count: 100_000) + "\"}\n")
                s.write("{\"type\":\"status\",\"request_id\":9}\n")
                let lines = await s.readLines(2)
                try #require(lines.count == 2)
                #expect(try errorCode(lines[0]) == "oversized")
                #expect(try reply(lines[1])["request_id"] as? Int == 9)
            }
        }
    }

    @Test("an endless line costs bounded memory and the agent keeps serving others")
    func endlessLine() async throws {
        try await withTemporaryDirectory { dir in
            try await withRunningAgent(in: dir) { socket, _ in
                let s = try RawSocket(path: socket)
                for _ in 0..<200 {  // 10 MB, no newline
                    s.write(String(repeating: "y", count: 50_000))
                    try await Task.sleep(nanoseconds: 1_000_000)
                }
                let status: AgentStatus = try await LockstepClient.withConnection(socketPath: socket) { try await $0.request("status") }
                #expect(status.pid == getpid())
                let first = await s.readLines(1)
                #expect(try errorCode(first.first ?? "{}") == "oversized")
            }
        }
    }

    @Test("a client that never reads is disconnected when its queue is full; the agent is unaffected")
    func neverReads() async throws {
        try await withTemporaryDirectory { dir in
            try await withRunningAgent(in: dir) { socket, _ in
                let lazy = try RawSocket(path: socket)
                lazy.write("{\"type\":\"subscribe\",\"topics\":[\"state\"]}\n")
                try await Task.sleep(nanoseconds: 100_000_000)
                try await LockstepClient.withConnection(socketPath: socket) { agent in
                    let _: GroupStateView = try await agent.request("command", CommandRequest(action: .load, item: "x"))
                    for i in 0..<1500 {
                        let _: GroupStateView = try await agent.request("command", CommandRequest(action: i % 2 == 0 ? .play : .pause))
                    }
                    let _: AgentStatus = try await agent.request("status")
                }
                #expect(await lazy.isClosedByPeer(), "the agent hung up on the client that does not read")
            }
        }
    }

    @Test("beyond the client limit a connection gets an overloaded error; clients that vanish mid-line leave no trace")
    func manyClients() async throws {
        try await withTemporaryDirectory { dir in
            try await withRunningAgent(in: dir) { socket, _ in
                var held: [RawSocket] = []
                for _ in 0..<64 { held.append(try RawSocket(path: socket)) }
                let extra = try RawSocket(path: socket)
                let line = await extra.readLines(1)
                #expect(try errorCode(line.first ?? "{}") == "overloaded")
                #expect(await extra.isClosedByPeer())
                for s in held { s.write("{\"type\":\"sta") }  // half a line, then gone
                held.removeAll()
                // The agent frees their slots as it sees them close (later on a starved machine):
                // a new client is served within 20 s.
                var status: AgentStatus?
                let deadline = MonotonicClock.read() + 20 * Nanos.second
                while status == nil, MonotonicClock.read() < deadline {
                    status = try? await LockstepClient.withConnection(socketPath: socket) { try await $0.request("status") }
                    if status == nil { try await Task.sleep(nanoseconds: 50_000_000) }
                }
                #expect(status?.players == 0, "a new client is served once the vanished ones are gone")
            }
        }
    }

    @Test("a player that disconnects leaves the participants")
    func playerVanishes() async throws {
        try await withTemporaryDirectory { dir in
            try await withRunningAgent(in: dir) { socket, _ in
                try await LockstepClient.withConnection(socketPath: socket) { agent in
                    let _: HelloResult = try await agent.request("hello", HelloRequest(role: .player, name: "gone soon"))
                    let _: LoadResult = try await agent.request("load", LoadRequest(item: "x"))
                }
                // The agent sees the disconnect as soon as it runs (within 20 s on a starved machine).
                var players: PlayersResult?
                let deadline = MonotonicClock.read() + 20 * Nanos.second
                repeat {
                    try await Task.sleep(nanoseconds: 50_000_000)
                    players = try await LockstepClient.withConnection(socketPath: socket) { try await $0.request("players") }
                } while players?.players.isEmpty == false && MonotonicClock.read() < deadline
                #expect(players?.players.isEmpty == true)
            }
        }
    }
}
