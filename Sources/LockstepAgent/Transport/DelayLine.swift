#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import CLockstepPosix
import LockstepCore
import LockstepPlayerProtocol

/// Sends datagrams later: the delay and jitter half of the impairment layer (test hook).
///
/// One thread sleeps on a monotonic condition variable until the earliest datagram is due, so a
/// 5 ms ± 1 ms link is 5 ms ± 1 ms to within the thread's wake-up latency (tens of µs).
final class DelayLine: @unchecked Sendable {
    // @unchecked: every field below is guarded by `mutex` (pthread primitives, which Swift's
    // checker cannot see through).
    private struct Item {
        var due: Int64
        var order: UInt64
        var bytes: [UInt8]
        var destination: Endpoint
    }

    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var heap: [Item] = []
    private var order: UInt64 = 0
    private var stopping = false
    private var stopped = false
    private let send: @Sendable ([UInt8], Endpoint) -> Void
    /// At most this many datagrams wait; more are dropped (a test hook must not eat memory).
    private let capacity = 65536

    init(send: @escaping @Sendable ([UInt8], Endpoint) -> Void) {
        self.send = send
        pthread_mutex_init(mutex, nil)
        var attr = pthread_condattr_t()
        pthread_condattr_init(&attr)
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attr)
        pthread_condattr_destroy(&attr)
        guard let thread = JoinableThread.start({ [self] in
            lockstep_name_thread("lockstep-delay")
            self.run()
        }) else { fatalError("the impairment layer's thread could not be started") }
        JoinableThread.detach(thread)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        condition.deallocate()
    }

    /// Queues `bytes` for `destination` at monotonic time `due`.
    func schedule(_ bytes: [UInt8], to destination: Endpoint, at due: Int64) {
        pthread_mutex_lock(mutex)
        if heap.count < capacity && !stopping {
            order &+= 1
            push(Item(due: due, order: order, bytes: bytes, destination: destination))
            pthread_cond_signal(condition)
        }
        pthread_mutex_unlock(mutex)
    }

    func stop() {
        pthread_mutex_lock(mutex)
        stopping = true
        pthread_cond_signal(condition)
        while !stopped { pthread_cond_wait(condition, mutex) }
        pthread_mutex_unlock(mutex)
    }

    private func run() {
        pthread_mutex_lock(mutex)
        while !stopping {
            guard let first = heap.first else {
                pthread_cond_wait(condition, mutex)
                continue
            }
            let now = MonotonicClock.read()
            if first.due > now {
                var ts = timespec(tv_sec: Int(first.due / 1_000_000_000), tv_nsec: Int(first.due % 1_000_000_000))
                pthread_cond_timedwait(condition, mutex, &ts)
                continue
            }
            let item = pop()
            pthread_mutex_unlock(mutex)
            send(item.bytes, item.destination)
            pthread_mutex_lock(mutex)
        }
        stopped = true
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }

    // A binary min-heap on (due, order): equal due times keep their sending order.
    private func less(_ a: Item, _ b: Item) -> Bool { (a.due, a.order) < (b.due, b.order) }

    private func push(_ item: Item) {
        heap.append(item)
        var i = heap.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard less(heap[i], heap[parent]) else { break }
            heap.swapAt(i, parent)
            i = parent
        }
    }

    private func pop() -> Item {
        let top = heap[0]
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            var i = 0
            while true {
                let l = 2 * i + 1, r = l + 1
                var m = i
                if l < heap.count && less(heap[l], heap[m]) { m = l }
                if r < heap.count && less(heap[r], heap[m]) { m = r }
                if m == i { break }
                heap.swapAt(i, m)
                i = m
            }
        }
        return top
    }
}
