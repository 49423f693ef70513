import Synchronization

/// The state shared by a connection and its channel handler: requests awaiting replies, ids,
/// and the queue of events.
final class MPVConnectionCore: Sendable {
    private struct Waiter {
        var continuation: CheckedContinuation<MPVReply, any Error>
        var sentAt: Int64 = 0
    }

    private struct State {
        var nextID: Int64 = 0
        var nextObserverID: Int64 = 0
        var waiting: [Int64: Waiter] = [:]
        var closed = false
    }

    private let state = Mutex(State())

    /// A queue of its own rather than an `AsyncStream`: cancelling a stream's reader finishes
    /// the stream, and readers here are cancelled (a timeout of `nextEvent`, a bridge session
    /// that ends) while the events must stay queued for the next reader.
    private struct Events {
        var queue: [MPVEvent] = []
        var head = 0
        /// The reader waiting for the next event (one reader at a time), with its ticket: a
        /// cancelled reader takes itself out, and only itself.
        var waiter: (ticket: Int64, continuation: CheckedContinuation<MPVEvent?, Never>)?
        var nextTicket: Int64 = 0
        var closed = false

        var count: Int { queue.count - head }

        mutating func pop() -> MPVEvent? {
            guard head < queue.count else { return nil }
            defer {
                head += 1
                if head > 1024 && head * 2 > queue.count {
                    queue.removeFirst(head)
                    head = 0
                }
            }
            return queue[head]
        }
    }

    private let events = Mutex(Events())
    static let maxQueuedEvents = 4096

    var isClosed: Bool { state.withLock { $0.closed } }

    func nextID() -> Int64 {
        state.withLock { s in
            s.nextID += 1
            return s.nextID
        }
    }

    func nextObserverID() -> Int64 {
        state.withLock { s in
            s.nextObserverID += 1
            return s.nextObserverID
        }
    }

    /// Registers a request; false (and the continuation resumed with an error) if it cannot be
    /// sent. Called by the requesting task: if it is cancelled before it got here, its
    /// cancellation handler found nothing to cancel, and the request is refused here.
    func add(_ id: Int64, _ continuation: CheckedContinuation<MPVReply, any Error>) -> Bool {
        let refusal: (any Error)? = state.withLock { s in
            if Task.isCancelled { return CancellationError() }
            if s.closed { return MPVError.disconnected }
            s.waiting[id] = Waiter(continuation: continuation)
            return nil
        }
        if let refusal {
            continuation.resume(throwing: refusal)
            return false
        }
        return true
    }

    func markSent(_ id: Int64, at time: Int64) {
        state.withLock { $0.waiting[id]?.sentAt = time }
    }

    func fail(_ id: Int64, _ error: any Error) {
        state.withLock { $0.waiting.removeValue(forKey: id) }?.continuation.resume(throwing: error)
    }

    func cancel(_ id: Int64) {
        fail(id, CancellationError())
    }

    /// One parsed line from mpv, read at host time `receivedAt`.
    func deliver(_ line: [String: MPVValue], receivedAt: Int64) {
        if let name = line["event"]?.string {
            let event = MPVEvent(name: name, receivedAt: receivedAt, fields: line)
            let waiter = events.withLock { e -> CheckedContinuation<MPVEvent?, Never>? in
                if let w = e.waiter {
                    e.waiter = nil
                    return w.continuation
                }
                e.queue.append(event)
                if e.count > Self.maxQueuedEvents { _ = e.pop() }
                return nil
            }
            waiter?.resume(returning: event)
            return
        }
        guard let id = line["request_id"]?.int,
              let waiter = state.withLock({ $0.waiting.removeValue(forKey: id) })
        else { return }
        waiter.continuation.resume(returning: MPVReply(
            requestID: id, error: line["error"]?.string ?? "success", data: line["data"] ?? .null,
            sentAt: waiter.sentAt, receivedAt: receivedAt))
    }

    /// The connection closed: pending requests fail, the event stream ends.
    func finish() {
        let waiters = state.withLock { s in
            s.closed = true
            defer { s.waiting = [:] }
            return Array(s.waiting.values)
        }
        for w in waiters { w.continuation.resume(throwing: MPVError.disconnected) }
        let reader = events.withLock { e in
            e.closed = true
            defer { e.waiter = nil }
            return e.waiter?.continuation
        }
        reader?.resume(returning: nil)
    }

    /// The next queued event, waiting for one if need be; nil on cancellation (the queue stays
    /// for the next reader), or once the connection has closed and the queue is empty.
    func nextEvent() async -> MPVEvent? {
        let ticket = events.withLock { e in
            e.nextTicket += 1
            return e.nextTicket
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<MPVEvent?, Never>) in
                let ready: MPVEvent?? = events.withLock { e in
                    if let event = e.pop() { return .some(event) }
                    // Cancelled before seating: the handler below found no waiter to end.
                    if e.closed || Task.isCancelled { return .some(nil) }
                    let previous = e.waiter
                    e.waiter = (ticket, continuation)
                    previous?.continuation.resume(returning: nil)  // one reader at a time
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let waiter = events.withLock { e -> CheckedContinuation<MPVEvent?, Never>? in
                guard let w = e.waiter, w.ticket == ticket else { return nil }
                e.waiter = nil
                return w.continuation
            }
            waiter?.resume(returning: nil)
        }
    }
}
