import Foundation
import LockstepClient
import LockstepPlayerProtocol

/// A connection to an agent that stays open across calls (``LockstepClient`` scopes its
/// connection to a closure). Benchmarks use it so that connecting is not part of what they time.
public final class PersistentClient: Sendable {
    private typealias Job = @Sendable (LockstepClient) async -> Void
    private let jobs: AsyncStream<Job>.Continuation
    private let task: Task<Void, Never>
    /// Events the agent sends on this connection.
    public let events: AsyncStream<LockstepClient.Event>

    /// Connects to `socketPath`; throws if no agent answers.
    public init(socketPath: String) async throws {
        let (jobStream, jobs) = AsyncStream<Job>.makeStream()
        let (events, eventSink) = AsyncStream<LockstepClient.Event>.makeStream()
        let (ready, readySink) = AsyncStream<Result<Void, any Error>>.makeStream()
        self.jobs = jobs
        self.events = events
        task = Task {
            do {
                try await LockstepClient.withConnection(socketPath: socketPath) { client in
                    readySink.yield(.success(()))
                    await withTaskGroup(of: Void.self) { group in
                        group.addTask {
                            for await e in client.events { eventSink.yield(e) }
                            eventSink.finish()
                        }
                        for await job in jobStream { await job(client) }
                        group.cancelAll()
                    }
                }
            } catch {
                readySink.yield(.failure(error))
            }
            eventSink.finish()
        }
        var it = ready.makeAsyncIterator()
        if case .failure(let e)? = await it.next() { throw e }
    }

    deinit {
        jobs.finish()
        task.cancel()
    }

    /// Runs `body` on the open connection.
    public func run<T: Sendable>(_ body: @escaping @Sendable (LockstepClient) async throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<T, any Error>) in
            let job: Job = { client in
                do { c.resume(returning: try await body(client)) } catch { c.resume(throwing: error) }
            }
            if case .terminated = jobs.yield(job) { c.resume(throwing: LockstepClient.Failure.disconnected) }
        }
    }

    public func request<R: Decodable & Sendable>(_ type: String, _ params: some Encodable & Sendable = EmptyResult(), as: R.Type = R.self) async throws -> R {
        try await run { try await $0.request(type, params, as: R.self) }
    }

    public func close() {
        jobs.finish()
        task.cancel()
    }
}
