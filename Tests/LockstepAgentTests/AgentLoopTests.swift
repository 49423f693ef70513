#if canImport(Glibc)
import Glibc
#endif
import LockstepCore
import LockstepPlayerProtocol
import Synchronization
import Testing

@testable import LockstepAgent

/// The agent's one thread: an actor's executor, a descriptor's reader and a timer.
@Suite("Agent loop")
struct AgentLoopTests {
    /// An actor on its own loop, as the agent is.
    actor OnLoop {
        nonisolated let loop = AgentLoop(name: "test-loop")
        nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
        var log: [String] = []

        func record(_ entry: String) { log.append(entry) }

        /// Schedules `names` at `deadlines` (in that order) and cancels the ones in `cancelled`.
        func schedule(_ deadlines: [(String, Int64)], cancelling cancelled: Set<String>, done: @escaping @Sendable () -> Void) {
            var timers: [String: AgentLoop.Timer] = [:]
            for (name, at) in deadlines {
                timers[name] = loop.schedule(at: at) { [self] in
                    assumeIsolated { $0.record(name) }
                    if name == "last" { done() }
                }
            }
            for name in cancelled { loop.cancel(timers[name]!) }
        }

        func watch(_ fd: Int32, done: @escaping @Sendable () -> Void) {
            loop.watch(fd) { [self] in
                assumeIsolated { actor in
                    var byte: UInt8 = 0
                    while read(fd, &byte, 1) == 1 { actor.record("read \(byte)") }
                    if byte == 3 {
                        actor.loop.unwatch()
                        done()
                    }
                }
            }
        }
    }

    @Test("calls from other threads run on the loop, one at a time, in the order they were made")
    func jobsRunInOrder() async {
        let actor = OnLoop()
        await withTaskGroup(of: Void.self) { group in
            for i in 0..<200 { await actor.record("\(i)") }
            group.addTask { for i in 200..<400 { await actor.record("\(i)") } }
        }
        let log = await actor.log
        #expect(log.count == 400)
        #expect(Array(log.prefix(200)) == (0..<200).map(String.init))
        #expect(log.filter { Int($0)! >= 200 } == (200..<400).map(String.init))
    }

    @Test("timers fire in deadline order whatever order they were set in, and a cancelled one never fires")
    func timersFireInOrder() async {
        let actor = OnLoop()
        let now = MonotonicClock.read()
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Task {
                await actor.schedule(
                    [("c", now + 30 * Nanos.millisecond), ("a", now - Nanos.second), ("last", now + 60 * Nanos.millisecond), ("b", now + 20 * Nanos.millisecond), ("x", now + 25 * Nanos.millisecond)],
                    cancelling: ["x"], done: { done.resume() })
            }
        }
        #expect(await actor.log == ["a", "b", "c", "last"])
        #expect(MonotonicClock.read() >= now + 60 * Nanos.millisecond)
    }

    @Test("a watched descriptor's handler runs on the loop each time it is readable, until unwatched")
    func watchedDescriptor() async throws {
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        _ = fcntl(fds[0], F_SETFL, O_NONBLOCK)
        defer { close(fds[0]); close(fds[1]) }
        let actor = OnLoop()
        let reader = fds[0], writer = fds[1]
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Task {
                await actor.watch(reader, done: { done.resume() })
                for byte: UInt8 in [1, 2, 3] {
                    var b = byte
                    _ = write(writer, &b, 1)
                    try? await Task.sleep(for: .milliseconds(5))
                }
            }
        }
        #expect(await actor.log == ["read 1", "read 2", "read 3"])
    }
}
