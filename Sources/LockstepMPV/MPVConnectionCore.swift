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
        /// Requests cancelled before they were registered.
        var cancelled: Set<Int64> = []
        var closed = false
    }

    private let state = Mutex(State())
    private struct Events {
        var queue: [MPVEvent] = []
        var head = 0
        /// The reader waiting for the next event (one reader at a time), with its ticket.
        var waiter: (ticket: Int64, continuation: CheckedContinuation<MPVEvent?, Never>)?
        var nextTicket: Int64 = 0
        /// The last ticket that registered as the waiter (or got its answer at once).
        var lastSeated: Int64 = 0
        /// Tickets abandoned before they were seated (a timeout or cancellation that raced them).
        var abandoned: Set<Int64> = []
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

    /// Registers a request; false (and the continuation resumed with an error) if it cannot be sent.
    func add(_ id: Int64, _ continuation: CheckedContinuation<MPVReply, any Error>) -> Bool {
        let refusal: (any Error)? = state.withLock { s in
            if s.cancelled.remove(id) != nil { return CancellationError() }
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
        let waiter: Waiter? = state.withLock { s in
            if let w = s.waiting.removeValue(forKey: id) { return w }
            s.cancelled.insert(id)
            return nil
        }
        waiter?.continuation.resume(throwing: CancellationError())
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

    /// The next queued event, waiting for one up to `timeout` ns (nil: forever); nil on
    /// timeout, cancellation, or once the connection has closed and the queue is empty.
    func nextEvent(timeout: Int64?) async -> MPVEvent? {
        let ticket = events.withLock { e in
            e.nextTicket += 1
            return e.nextTicket
        }
        let timer = timeout.map { ns in
            Task { [weak self] in
                try? await Task.sleep(nanoseconds: UInt64(max(ns, 0)))
                self?.abandon(ticket)
            }
        }
        defer { timer?.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<MPVEvent?, Never>) in
                let ready: MPVEvent?? = events.withLock { e in
                    e.lastSeated = ticket
                    if e.abandoned.remove(ticket) != nil { return .some(nil) }
                    if let event = e.pop() { return .some(event) }
                    if e.closed || Task.isCancelled { return .some(nil) }
                    let previous = e.waiter
                    e.waiter = (ticket, continuation)
                    previous?.continuation.resume(returning: nil)  // one reader at a time
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            abandon(ticket)
        }
    }

    /// Stops waiting for an event (timeout or cancellation): the waiter gets nil.
    private func abandon(_ ticket: Int64) {
        let waiter = events.withLock { e -> CheckedContinuation<MPVEvent?, Never>? in
            guard let w = e.waiter, w.ticket == ticket else {
                if ticket > e.lastSeated { e.abandoned.insert(ticket) }
                return nil
            }
            e.waiter = nil
            return w.continuation
        }
        waiter?.resume(returning: nil)
    }
}
