#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import NIOPosix
import Synchronization
import Testing

@testable import LockstepAgent
import LockstepPlayerProtocol

/// A client's lines written into its socket from the sending threads, the channel taking over
/// while the socket is full.
@Suite("Direct line writes")
struct DirectLineWriterTests {
    @Test("lines from several threads arrive whole and each thread's in order, while a full socket sends some through the channel")
    func linesStayWholeAndInOrder() throws {
        var pair: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        var small: Int32 = 4096
        setsockopt(pair[0], SOL_SOCKET, SO_SNDBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        let writer = try #require(DirectLineWriter(duplicating: pair[0]))
        let channel = try ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).withConnectedSocket(pair[0]).wait()
        let reader = pair[1]
        defer {
            writer.close()
            channel.close(promise: nil)
            close(reader)
        }
        let threads = 4, perThread = 500
        let done = Tally()
        let got = Received()
        // Threads of their own, not tasks: on a loaded machine (the whole suite at once) the
        // concurrency pool's threads may all be blocked elsewhere for seconds.
        // A slow reader from the start: the socket fills, the channel queues, the socket drains
        // again while lines still come (where a direct write could overtake the channel's).
        let readerThread = try #require(JoinableThread.start {
            var chunk = [UInt8](repeating: 0, count: 2048)
            var newlines = 0
            let deadline = MonotonicClock.read() + 30_000_000_000
            while newlines < threads * perThread, MonotonicClock.read() < deadline {
                let n = recv(reader, &chunk, chunk.count, Int32(MSG_DONTWAIT))
                if n > 0 {
                    got.bytes.withLock { $0.append(contentsOf: chunk[0..<n]) }
                    newlines += chunk[0..<n].count { $0 == UInt8(ascii: "\n") }
                }
                usleep(100)
            }
        })
        var writers: [pthread_t] = []
        for t in 0..<threads {
            writers.append(try #require(JoinableThread.start {
                for i in 0..<perThread {
                    let text = "\(t) \(i) " + String(repeating: "x", count: 200) + "\n"
                    writer.write(ByteBuffer(string: text), channel: channel) { done.count.wrappingAdd(1, ordering: .relaxed) }
                    if i % 10 == 0 { usleep(200) }
                }
            }))
        }
        for w in writers { JoinableThread.join(w) }
        JoinableThread.join(readerThread)
        let received = got.bytes.withLock { $0 }
        let lines = String(decoding: received, as: UTF8.self).split(separator: "\n")
        #expect(lines.count == threads * perThread)
        var next = [Int](repeating: 0, count: threads)
        for line in lines {
            let parts = line.split(separator: " ")
            #expect(parts.count == 3 && parts[2].count == 200, "a whole line")
            guard parts.count == 3, let t = Int(parts[0]), let i = Int(parts[1]), t < threads else { continue }
            #expect(i == next[t], "thread \(t)'s line \(i) after \(next[t] - 1)")
            next[t] = i + 1
        }
        #expect(writer.linesThroughChannel > 0, "the full socket sent some through the channel")
        #expect(writer.linesThroughChannel < threads * perThread, "the socket took some directly")
        let deadline = MonotonicClock.read() + 5_000_000_000
        while done.count.load(ordering: .relaxed) < threads * perThread, MonotonicClock.read() < deadline { usleep(1_000) }
        #expect(done.count.load(ordering: .relaxed) == threads * perThread, "every line written or given up")
    }

    @Test("once the writer is closed, lines go through the channel")
    func closedWriterUsesTheChannel() async throws {
        var pair: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        let writer = try #require(DirectLineWriter(duplicating: pair[0]))
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).withConnectedSocket(pair[0]).get()
        defer {
            channel.close(promise: nil)
            close(pair[1])
        }
        writer.write(ByteBuffer(string: "one\n"), channel: channel) {}
        #expect(writer.linesThroughChannel == 0)
        writer.close()
        writer.write(ByteBuffer(string: "two\n"), channel: channel) {}
        #expect(writer.linesThroughChannel == 1)
        var got: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64)
        let deadline = MonotonicClock.read() + 5_000_000_000
        while got.count < 8, MonotonicClock.read() < deadline {
            let n = recv(pair[1], &chunk, chunk.count, Int32(MSG_DONTWAIT))
            if n > 0 { got.append(contentsOf: chunk[0..<n]) } else { usleep(1_000) }
        }
        #expect(String(decoding: got, as: UTF8.self) == "one\ntwo\n")
    }
}

/// A count shared with the writer's completions.
private final class Tally: Sendable {
    let count = Atomic<Int>(0)
}

/// What the reading thread took from the socket.
private final class Received: Sendable {
    let bytes = Mutex<[UInt8]>([])
}
