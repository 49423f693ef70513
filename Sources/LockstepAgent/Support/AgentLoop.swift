#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CLockstepPosix
import LockstepPlayerProtocol
import Synchronization

/// The agent's one thread: the executor of the ``Agent`` actor, the reader of its peer socket
/// and its timers, in one `poll(2)` loop.
///
/// Why one thread: before, a datagram woke three (the peer socket's receive thread, a thread of
/// the concurrency pool draining the stream between them, and the NIO event loop the actor ran
/// on), and each timer woke the event loop. At idle, those wake-ups were most of an agent's CPU
/// (`perf` on an 8-host lab: context switches, futexes and executor hops about half of it). Here
/// a datagram wakes this thread once: it is read with its kernel timestamp, opened, handled by
/// the agent and answered before the thread sleeps again. Work from other threads (the player
/// socket's, discovery's) still reaches the actor as jobs, queued here with one wake-up.
///
/// Everything but ``enqueue(_:)``, ``execute(_:)`` and ``checkIsolated()`` is for the loop
/// thread only (the actor's code). The thread lives as long as the loop: it ends when the loop is
/// released (an actor's jobs hold their actor, which holds its loop, so none is left behind).
final class AgentLoop: SerialExecutor, Sendable {
    /// A timer, to cancel it.
    struct Timer: Hashable, Sendable {
        fileprivate let id: UInt64
    }

    private let core: Core

    /// Starts the loop's thread, named `name` (at most 15 bytes show).
    init(name: String = "lockstep-agent") {
        core = Core()
        core.executor = UnownedSerialExecutor(ordinary: self)
        guard let thread = JoinableThread.start({ [core] in core.run(name: name) }) else {
            fatalError("cannot start the agent's thread (pthread_create failed)")
        }
        core.thread.withLock { $0 = thread }
        JoinableThread.detach(thread)
    }

    deinit { core.stop() }

    // MARK: - Any thread

    func enqueue(_ job: consuming ExecutorJob) {
        core.post(.job(UnownedJob(job)))
    }

    /// Runs `body` on the loop thread, soon.
    func execute(_ body: @escaping @Sendable () -> Void) {
        core.post(.closure(body))
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Code outside a job (a timer's or the socket's handler) runs on the actor's executor
    /// exactly when it runs on the loop thread.
    func checkIsolated() {
        precondition(isLoopThread, "not on the agent's thread")
    }

    func isIsolatingCurrentContext() -> Bool? { isLoopThread }

    private var isLoopThread: Bool {
        core.thread.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    // MARK: - Loop thread

    /// Calls `onReady` on the loop thread whenever `fd` is readable or has an error queued (a
    /// socket's transmit timestamps), until ``unwatch()``. One descriptor at a time.
    func watch(_ fd: Int32, _ onReady: @escaping () -> Void) {
        core.watched = (fd, onReady)
    }

    func unwatch() {
        core.watched = nil
    }

    /// Runs `body` on the loop thread at `deadline` (`CLOCK_MONOTONIC`, ns), or at once if past.
    @discardableResult
    func schedule(at deadline: Int64, _ body: @escaping () -> Void) -> Timer {
        core.nextTimer &+= 1
        let timer = Timer(id: core.nextTimer)
        let index = core.timers.firstIndex { $0.deadline > deadline } ?? core.timers.endIndex
        core.timers.insert((deadline, timer, body), at: index)
        return timer
    }

    func cancel(_ timer: Timer) {
        core.timers.removeAll { $0.timer == timer }
    }
}

extension AgentLoop {
    /// The loop's state; the thread holds this, not the loop, so that releasing the loop ends it.
    fileprivate final class Core: @unchecked Sendable {
        enum Work {
            case job(UnownedJob)
            case closure(@Sendable () -> Void)
        }

        /// Set once in the loop's init, before the thread starts.
        var executor: UnownedSerialExecutor?
        let thread = Mutex<pthread_t?>(nil)
        private let queue = Mutex<[Work]>([])
        /// A byte is in the pipe (or about to be): later posts need not write another.
        private let woken = Atomic(false)
        private let stopped = Atomic(false)
        private let wake: (read: Int32, write: Int32)

        // The loop thread's own.
        var watched: (fd: Int32, onReady: () -> Void)?
        var timers: [(deadline: Int64, timer: Timer, body: () -> Void)] = []
        var nextTimer: UInt64 = 0

        init() {
            var fds: [Int32] = [-1, -1]
            guard pipe(&fds) == 0 else { fatalError("cannot create the agent's wake-up pipe (errno \(errno))") }
            for fd in fds {
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                _ = fcntl(fd, F_SETFL, O_NONBLOCK)
            }
            wake = (fds[0], fds[1])
        }

        deinit {
            close(wake.read)
            close(wake.write)
        }

        func post(_ work: Work) {
            queue.withLock { $0.append(work) }
            signal()
        }

        func stop() {
            stopped.store(true, ordering: .releasing)
            signal()
        }

        private func signal() {
            guard !woken.exchange(true, ordering: .acquiringAndReleasing) else { return }
            var byte: UInt8 = 1
            _ = write(wake.write, &byte, 1)
        }

        func run(name: String) {
            lockstep_name_thread(name)
            var fds = [pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0), pollfd(fd: -1, events: Int16(POLLIN), revents: 0)]
            while !stopped.load(ordering: .acquiring) {
                fds[1].fd = watched?.fd ?? -1
                fds[0].revents = 0
                fds[1].revents = 0
                let ready = Self.poll(&fds, until: timers.first?.deadline)
                if ready < 0 && errno != EINTR { fatalError("the agent's poll failed (errno \(errno))") }
                if fds[0].revents != 0 {
                    var bytes = (UInt64(0), UInt64(0))
                    _ = withUnsafeMutableBytes(of: &bytes) { read(wake.read, $0.baseAddress, $0.count) }
                }
                if fds[1].revents != 0, let watched, watched.fd == fds[1].fd { watched.onReady() }
                runDueTimers()
                runQueued()
            }
        }

        private func runDueTimers() {
            let now = MonotonicClock.read()
            while let first = timers.first, first.deadline <= now {
                timers.removeFirst()
                first.body()
            }
        }

        private func runQueued() {
            // Cleared before taking the queue: a post after this writes a byte again.
            woken.store(false, ordering: .releasing)
            let work = queue.withLock { q -> [Work] in
                defer { q.removeAll(keepingCapacity: true) }
                return q
            }
            for w in work {
                switch w {
                case .job(let job): job.runSynchronously(on: executor!)
                case .closure(let body): body()
                }
            }
        }

        /// `poll(2)` until one of `fds` is ready or `deadline` (monotonic ns) passes.
        private static func poll(_ fds: inout [pollfd], until deadline: Int64?) -> Int32 {
            let wait = deadline.map { max(0, $0 - MonotonicClock.read()) } ?? -1
            return lockstep_poll_ns(&fds, UInt32(fds.count), wait)
        }
    }
}
