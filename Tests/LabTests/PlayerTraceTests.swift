import Foundation
import LockstepClient
import LockstepLab
import LockstepPlayerProtocol
import LockstepRefPlayer
import Synchronization
import Testing

/// Reading a reference player's log back (no lab needed): the timelines it received, with when
/// they arrived and which command set them, beside its segments.
@Suite("PlayerTrace")
struct PlayerTraceTests {
    @Test("timeline lines become instructions, kept even when a later segment replaces theirs; other lines do not")
    func instructions() throws {
        let lines = [
            #"{"kind":"segment","cause":"timeline","received_host_ns":1000,"origin_peer_id":"aa","origin_lamport":3,"segment":{"from_host_ns":40000,"position_ns":0,"rate":1}}"#,
            #"{"kind":"segment","cause":"rate-correction","segment":{"from_host_ns":50000,"position_ns":10000,"rate":1.001}}"#,
            #"{"kind":"segment","cause":"timeline","received_host_ns":2000,"origin_peer_id":"bb","origin_lamport":1,"segment":{"from_host_ns":30000,"position_ns":7000,"rate":0}}"#,
            #"{"kind":"tick","host_time_ns":60000,"position_ns":20000}"#,
        ]
        let trace = PlayerTrace(name: "h1", lines: lines.map { Substring($0) })
        #expect(trace.segments.map(\.from) == [30000])
        #expect(trace.instructions.count == 2)
        let play = try #require(trace.instruction(from: "aa", lamport: 3))
        #expect(play.received == 1000 && play.from == 40000 && play.rate == 1)
        #expect(trace.instruction(from: "bb", lamport: 1)?.rate == 0)
        #expect(trace.instruction(from: "aa", lamport: 4) == nil)
    }

    @Test("the reference player's own lines read back: when each timeline arrived, which command set it, and the segments it made")
    func referencePlayerLines() async throws {
        let lines = Mutex<[String]>([])
        var c = ReferencePlayer.Configuration()
        c.startLatencyNs = 0
        c.startJitterNs = 0
        let clock = ManualClock(1_000_000)
        let player = ReferencePlayer(configuration: c, clock: clock) { line in lines.withLock { $0.append(line) } }
        let origin = Origin(peerID: "cc", name: "h2", action: .play, reason: nil, local: false, lamport: 9)
        await player.play(PlayCommand(item: c.item, itemTimeNs: 5_000, hostTimeNs: 3_000_000, rate: 1, originator: origin))
        clock.advance(by: 4_000_000)
        var paused = origin
        paused.action = .pause
        paused.lamport = 10
        await player.pause(PauseCommand(item: c.item, itemTimeNs: 7_000_000, hostTimeNs: 6_000_000, originator: paused))
        let trace = PlayerTrace(name: "h2", lines: lines.withLock { $0 }.map { Substring($0) })
        let play = try #require(trace.instruction(from: "cc", lamport: 9))
        #expect(play.received == 1_000_000 && play.from == 3_000_000 && play.rate == 1)
        #expect(trace.instruction(from: "cc", lamport: 10)?.received == 5_000_000)
        #expect(trace.position(at: 4_000_000) == 1_005_000, "a millisecond after the play's instant")
        #expect(trace.position(at: 9_000_000) == 7_000_000, "paused")
    }
}
