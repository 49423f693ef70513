import Foundation
import LockstepCore
import LockstepPeerWire
import LockstepPlayerProtocol
import LockstepTestKit
import Logging
import NIOCore
import NIOEmbedded
import NIOPosix
import Testing

@testable import LockstepAgent

/// The agent's own logic with a manual clock and no sockets: requests in through
/// `handle(line:from:)`, replies and events out of the client's queue, time moved by hand (the
/// agent schedules no timer; `tick()` runs what the timer would). Nothing sleeps.
@Suite("Agent logic on a manual clock")
struct AgentLogicTests {
    /// An agent on a manual clock, and a way to talk to it as a client.
    final class Harness: Sendable {
        let clock = ManualClock(1_000_000_000_000)
        let agent: Agent
        let dir: String

        init(dir: String, configure: (inout AgentConfiguration) -> Void = { _ in }) throws {
            self.dir = dir
            var config = AgentConfiguration(socketPath: dir + "/agent.sock", stateDirectory: dir + "/state")
            config.mdns = false
            configure(&config)
            let state = StateDirectory(path: config.stateDirectory)
            try state.prepare()
            let identity = Agent.Identity(device: try state.deviceIdentity().identity, name: "den", incarnation: 1, group: try state.activeGroup(selecting: nil))
            agent = Agent(
                configuration: config, identity: identity,
                logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), clock: .manual(clock))
        }

        /// A connected client and the lines the agent sends it.
        func connect(id: UInt64 = 1) async -> (ClientConnection, AsyncStream<ByteBuffer>.AsyncIterator) {
            let (stream, queue) = AsyncStream<ByteBuffer>.makeStream(bufferingPolicy: .bufferingOldest(1024))
            let client = ClientConnection(id: id, credentials: nil, queue: queue, channel: EmbeddedChannel(), logger: Logger(label: "client", factory: { _ in SwiftLogNoOpLogHandler() }))
            await agent.connected(client)
            return (client, stream.makeAsyncIterator())
        }

        func send(_ line: String, from client: ClientConnection) async {
            await agent.handle(line: Array(line.utf8), from: client)
        }
    }

    static func next(_ lines: inout AsyncStream<ByteBuffer>.AsyncIterator) async -> [String: Any] {
        guard var buffer = await lines.next(), let text = buffer.readString(length: buffer.readableBytes) else { return [:] }
        return (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]) ?? [:]
    }

    /// The next line that is an event named `name` (skipping others), within `limit` lines.
    static func event(_ name: String, in lines: inout AsyncStream<ByteBuffer>.AsyncIterator, limit: Int = 100) async -> [String: Any]? {
        for _ in 0..<limit {
            let line = await next(&lines)
            if line.isEmpty { return nil }
            if line["event"] as? String == name { return line }
        }
        return nil
    }

    @Test("a player's hello with start_latency_ns = Int64.max is refused as invalid_field; the agent serves on")
    func hugeLatency() async throws {
        try await withTemporaryDirectory { dir in
            let h = try Harness(dir: dir)
            var (client, lines) = await h.connect()
            await h.send(#"{"type":"hello","request_id":1,"protocol":1,"role":"player","start_latency_ns":9223372036854775807}"#, from: client)
            let refused = await Self.next(&lines)
            #expect((refused["error"] as? [String: Any])?["code"] as? String == "invalid_field")
            #expect(((refused["error"] as? [String: Any])?["message"] as? String)?.hasPrefix("start_latency_ns must be within 0...10000000000") == true)
            await h.send(#"{"type":"load","request_id":2,"item":"film"}"#, from: client)
            #expect((await Self.next(&lines)["error"] as? [String: Any])?["code"] as? String == "not_a_player")
            await h.send(#"{"type":"status","request_id":3}"#, from: client)
            #expect(await Self.next(&lines)["ok"] as? Bool == true)
        }
    }

    @Test("a subscriber of clock and sync gets clock_changed each second, sync_changed while a player's error is current (one more to clear it), and nothing once it is gone")
    func measurementTopics() async throws {
        try await withTemporaryDirectory { dir in
            let h = try Harness(dir: dir)
            var (player, playerLines) = await h.connect(id: 1)
            await h.send(#"{"type":"hello","request_id":1,"protocol":1,"role":"player","name":"tv","start_latency_ns":20000000}"#, from: player)
            await h.send(#"{"type":"load","request_id":2,"item":"film"}"#, from: player)
            await h.send(#"{"type":"ready","request_id":3}"#, from: player)
            await h.send(#"{"type":"intent","request_id":4,"action":"play"}"#, from: player)
            var start = await Self.event("timeline", in: &playerLines)
            while let t = start, t["state"] as? String != "playing" { start = await Self.event("timeline", in: &playerLines) }
            let anchor = (start?["host_time_ns"] as? NSNumber)?.int64Value ?? 0

            var (watcher, lines) = await h.connect(id: 2)
            await h.send(#"{"type":"subscribe","request_id":1,"topics":["clock","sync"]}"#, from: watcher)
            #expect(await Self.next(&lines)["ok"] as? Bool == true)
            #expect(await h.agent.node.syncReports.wanted, "watching sync asks the peers for theirs")
            await h.agent.tick()
            let first = await Self.next(&lines)
            #expect(first["event"] as? String == "clock_changed")
            #expect((first["clock"] as? [String: Any])?["peers"] is [Any])

            // Half a second into playback the player is 2 ms behind.
            h.clock.set(anchor + 500_000_000)
            await h.send(#"{"type":"position","request_id":5,"position_ns":498000000,"host_time_ns":\#(anchor + 500_000_000)}"#, from: player)
            h.clock.advance(by: 1_000_000_000)
            await h.agent.tick()
            // Nothing was measured at the first push, so the next line is the second push's clock.
            #expect(await Self.next(&lines)["event"] as? String == "clock_changed")
            let sync = await Self.next(&lines)
            #expect(sync["event"] as? String == "sync_changed")
            let error = ((sync["players"] as? [[String: Any]])?.first?["sync_error_ns"] as? NSNumber)?.int64Value
            #expect(error.map { abs($0 + 2_000_000) < 10_000 } == true, "sync error \(String(describing: error)) ns, about −2 ms")

            // No report for over 3 s: the error is no longer current; one push clears it, then none.
            h.clock.advance(by: 3_000_000_000)
            await h.agent.tick()
            #expect(await Self.next(&lines)["event"] as? String == "clock_changed")
            let cleared = await Self.next(&lines)
            #expect(cleared["event"] as? String == "sync_changed")
            #expect((cleared["players"] as? [[String: Any]])?.count == 1)
            #expect((cleared["players"] as? [[String: Any]])?.first?["sync_error_ns"] == nil)
            for _ in 0..<2 {
                h.clock.advance(by: 1_000_000_000)
                await h.agent.tick()
                #expect(await Self.next(&lines)["event"] as? String == "clock_changed", "no sync_changed while nothing is measured")
            }

            await h.agent.disconnected(watcher)
            #expect(await h.agent.measurements.nextDue == nil)
            #expect(await !h.agent.node.syncReports.wanted)
            _ = player
        }
    }

    @Test("a position report taken more than 60 s away from the agent's host time is refused")
    func staleReport() async throws {
        try await withTemporaryDirectory { dir in
            let h = try Harness(dir: dir)
            var (client, lines) = await h.connect()
            await h.send(#"{"type":"hello","request_id":1,"protocol":1,"role":"player"}"#, from: client)
            _ = await Self.next(&lines)
            let stale = h.clock.now() - 61_000_000_000
            await h.send(#"{"type":"position","request_id":2,"position_ns":5,"host_time_ns":\#(stale)}"#, from: client)
            let error = await Self.next(&lines)["error"] as? [String: Any]
            #expect(error?["code"] as? String == "invalid_field")
            #expect((error?["message"] as? String)?.hasPrefix("host_time_ns must be within 60 s") == true)
        }
    }

    @Test("a group that waits for a player that never gets ready starts after the wait timeout, moved by hand")
    func waitTimeout() async throws {
        try await withTemporaryDirectory { dir in
            let h = try Harness(dir: dir) { $0.waitTimeout = .seconds(8) }
            var (a, aLines) = await h.connect(id: 1)
            let (b, _) = await h.connect(id: 2)
            for (client, name) in [(a, "a"), (b, "b")] {
                await h.send(#"{"type":"hello","request_id":1,"protocol":1,"role":"player","name":"\#(name)","start_latency_ns":20000000}"#, from: client)
                await h.send(#"{"type":"load","request_id":2,"item":"film"}"#, from: client)
            }
            await h.send(#"{"type":"ready","request_id":3}"#, from: a)
            await h.send(#"{"type":"intent","request_id":4,"action":"play"}"#, from: a)
            let wait = await Self.event("wait", in: &aLines)
            #expect(((wait?["waiting_for"] as? [[String: Any]])?.first?["player"] as? String) == "b")
            h.clock.advance(by: 7_900_000_000)
            await h.agent.tick()
            h.clock.advance(by: 100_000_000)
            await h.agent.tick()
            let start = await Self.event("timeline", in: &aLines)
            #expect(start?["state"] as? String == "playing")
            #expect((start?["origin"] as? [String: Any])?["reason"] as? String == "timeout")
            #expect(((start?["host_time_ns"] as? NSNumber)?.int64Value ?? 0) >= h.clock.now())
            _ = a
        }
    }

    @Test("an admitted member is written to the group file once the save delay is over, together with those admitted meanwhile, and at stop, moved by hand")
    func admissionsSaved() async throws {
        try await withTemporaryDirectory { dir in
            let h = try Harness(dir: dir)
            let state = StateDirectory(path: dir + "/state")
            func saved(_ d: DeviceIdentity) throws -> Bool { try state.loadGroup("default")?.roster.isMember(d.peerID) == true }
            let members = (2...3).map { DeviceIdentity(rawRepresentation: Array(repeating: UInt8($0), count: 32))! }
            for m in members { await h.agent.admit(m, name: "m\(m.peerID.short)") }
            #expect(await h.agent.keys.roster.isMember(members[1].peerID))
            #expect(try !saved(members[0]))
            h.clock.advance(by: 999_000_000)
            await h.agent.tick()
            #expect(try !saved(members[0]))
            h.clock.advance(by: 1_000_000)
            await h.agent.tick()
            #expect(try saved(members[0]) && saved(members[1]))

            let late = DeviceIdentity(rawRepresentation: Array(repeating: 4, count: 32))!
            await h.agent.admit(late, name: "late")
            #expect(try !saved(late))
            await h.agent.stop()
            #expect(try saved(late))
        }
    }

    @Test("a key rotation seals under the new key only after the grace period, moved by hand")
    func rotation() async throws {
        try await withTemporaryDirectory { dir in
            let h = try Harness(dir: dir)
            var (client, lines) = await h.connect()
            await h.send(#"{"type":"group_rotate","request_id":1}"#, from: client)
            let reply = await Self.next(&lines)
            #expect((reply["result"] as? [String: Any])?["epoch"] as? Int == 2)
            #expect(try StateDirectory(path: dir + "/state").loadGroup("default")?.epoch == 2)
            #expect(await h.agent.keys.nextDeadline == LocalTime(ns: h.clock.now()) + .seconds(3))
            h.clock.advance(by: 3_000_000_000)
            await h.agent.tick()
            // Sealing under the new key now; the previous one is accepted until its life ends.
            #expect(await h.agent.keys.nextDeadline == LocalTime(ns: h.clock.now()) + .seconds(27))
            h.clock.advance(by: 27_000_000_000)
            await h.agent.tick()
            #expect(await h.agent.keys.nextDeadline == nil)
            #expect(await h.agent.keys.acceptedKeys.map(\.epoch) == [2])
        }
    }
}

extension Agent {
    /// `device` announces its key under the current group key, as a member's `member_key` does.
    func admit(_ device: DeviceIdentity, name: String) {
        execute(keys.onMemberKey(device.member.bytes, name: name, from: device.peerID, epochByte: UInt8(truncatingIfNeeded: keys.group.epoch), now: now()))
    }
}
