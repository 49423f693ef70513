import Foundation
import LockstepClient
import LockstepCore
import Logging
import ServiceLifecycleTestKit
import Synchronization

import LockstepAgent

/// Runs an `AgentService` in-process for the duration of `body`, then shuts it down gracefully
/// and waits until it has stopped.
public func withRunningAgent<T: Sendable>(
    in dir: String, configure: (inout AgentConfiguration) -> Void = { _ in },
    _ body: @Sendable (_ socketPath: String, _ agent: Agent) async throws -> T
) async throws -> T {
    var config = AgentConfiguration(socketPath: dir + "/agent.sock", stateDirectory: dir + "/state")
    config.mdns = false
    configure(&config)
    let ready = AsyncStream<Agent>.makeStream()
    let service = AgentService(configuration: config, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })) { ready.continuation.yield($0) }
    let socketPath = config.socketPath
    return try await testGracefulShutdown { trigger in
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                // An agent that fails to start ends the wait below with its error, not a hang.
                defer { ready.continuation.finish() }
                try await service.run()
                return nil
            }
            var iterator = ready.stream.makeAsyncIterator()
            guard let agent = await iterator.next() else {
                while let r = try await group.next() {
                    if let r { return r }
                }
                throw AgentEndedBeforeReady()
            }
            let result = try await body(socketPath, agent)
            trigger.triggerGracefulShutdown()
            while let r = try await group.next() {
                if let r { return r }
            }
            return result
        }
    }
}

/// The agent's service returned without an error before it served its socket.
struct AgentEndedBeforeReady: Error, CustomStringConvertible {
    var description: String { "the agent stopped before it was ready" }
}
