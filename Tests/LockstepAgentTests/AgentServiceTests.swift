import Foundation
import LockstepClient
import LockstepCore
import LockstepPlayerProtocol
import LockstepTestKit
import Testing

@testable import LockstepAgent

@Suite("Agent service")
struct AgentServiceTests {
    @Test("a running agent answers status with its id, name, socket, version and uptime")
    func statusOverSocket() async throws {
        try await withTemporaryDirectory { dir in
            let status = try await withRunningAgent(in: dir, configure: { $0.name = "kitchen" }) { socket, _ in
                try await LockstepClient.withConnection(socketPath: socket) { agent in
                    try await agent.request("status", as: AgentStatus.self)
                }
            }
            let storedID = try StateDirectory(path: dir + "/state").deviceIdentity().identity.peerID.hex
            #expect(status.peerID == storedID)
            #expect(status.name == "kitchen")
            #expect(status.socket == dir + "/agent.sock")
            #expect(status.version == LockstepVersion.current)
            #expect(status.uptimeNs > 0)
            #expect(status.pid == getpid())
        }
    }

    @Test("group_reset_identity writes a new device key and the agent starts again under it, on the same socket")
    func resetIdentity() async throws {
        try await withTemporaryDirectory { dir in
            let (before, reset, after) = try await withRunningAgent(in: dir) { socket, _ in
                let before = try await LockstepClient.withConnection(socketPath: socket) { try await $0.request("status", as: AgentStatus.self) }
                let reset = try await LockstepClient.withConnection(socketPath: socket) { try await $0.request("group_reset_identity", as: GroupResetIdentityResult.self) }
                var after: AgentStatus?
                for _ in 0..<100 where after?.peerID != reset.peerID {
                    try await Task.sleep(nanoseconds: 50_000_000)
                    after = try? await LockstepClient.withConnection(socketPath: socket) { try await $0.request("status", as: AgentStatus.self) }
                }
                return (before, reset, after)
            }
            #expect(reset.peerID != before.peerID)
            #expect(reset.fingerprint != reset.previousFingerprint)
            #expect(after?.peerID == reset.peerID, "the agent answers under the new key")
            let stored = try StateDirectory(path: dir + "/state").deviceIdentity().identity
            #expect(stored.peerID.hex == reset.peerID)
            let mode = try FileManager.default.attributesOfItem(atPath: dir + "/state/identity")[.posixPermissions] as? Int
            #expect(mode == 0o600)
        }
    }

    @Test("graceful shutdown removes the socket and its lock file")
    func shutdownRemovesSocket() async throws {
        try await withTemporaryDirectory { dir in
            let existed = try await withRunningAgent(in: dir) { socket, _ in
                FileManager.default.fileExists(atPath: socket)
            }
            #expect(existed)
            #expect(!FileManager.default.fileExists(atPath: dir + "/agent.sock"))
            #expect(!FileManager.default.fileExists(atPath: dir + "/agent.sock.lock"))
        }
    }

    @Test("the socket is private to its user by default (mode 0600)")
    func socketMode() async throws {
        try await withTemporaryDirectory { dir in
            let mode = try await withRunningAgent(in: dir) { socket, _ in
                try FileManager.default.attributesOfItem(atPath: socket)[.posixPermissions] as? Int
            }
            #expect(mode == 0o600)
        }
    }

    @Test("a client that speaks another protocol version gets a clear error")
    func helloVersionMismatch() async throws {
        try await withTemporaryDirectory { dir in
            let error = try await withRunningAgent(in: dir) { socket, _ in
                try await LockstepClient.withConnection(socketPath: socket) { agent -> LockstepClient.Failure? in
                    do {
                        _ = try await agent.request("hello", HelloRequest(protocol: 99), as: HelloResult.self)
                        return nil
                    } catch let f as LockstepClient.Failure {
                        return f
                    }
                }
            }
            guard case .rejected(let e)? = error else {
                Issue.record("expected a rejection, got \(String(describing: error))")
                return
            }
            #expect(e.code == .unsupportedVersion)
        }
    }

    @Test("with no agent the client says so and how to start one")
    func noAgent() async throws {
        await #expect(throws: LockstepClient.Failure.agentNotRunning(socketPath: "/tmp/lkt-none/agent.sock")) {
            try await LockstepClient.withConnection(socketPath: "/tmp/lkt-none/agent.sock") { _ in () }
        }
        #expect(LockstepClient.Failure.agentNotRunning(socketPath: "/x").description.contains("start one with 'lockstepd'"))
    }
}
