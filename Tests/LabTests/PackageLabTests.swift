import Foundation
import LockstepCore
import LockstepLab
import LockstepPlayerProtocol
import Testing

/// Where tools/test extracted the .deb (its usr/bin holds the packaged binaries).
private let packageRoot = ProcessInfo.processInfo.environment["LOCKSTEP_PACKAGE_ROOT"]

/// The packaged binaries (the .deb's, extracted into LOCKSTEP_PACKAGE_ROOT by tools/test) on lab
/// hosts whose mount namespace hides the Swift toolchain: they find each other and play in step.
@Suite(
    "Lab: the packaged agent",
    .enabled(if: Lab.isEnabled && packageRoot != nil, "needs root, LOCKSTEP_LAB=1 and LOCKSTEP_PACKAGE_ROOT (tools/test)"),
    .serialized)
struct PackageLabTests {
    /// What the agent's mount namespace hides: the toolchain, the package mirrors, the work trees.
    static let hidden = ["/opt/swift", "/opt/swift-packages", "/work", "/root/.debug"]

    /// `command` on `host` with the toolchain hidden (a private mount namespace of its own).
    static func withoutToolchain(_ command: [String]) -> [String] {
        let mounts = hidden.map { "if [ -d \($0) ]; then mount -t tmpfs hidden \($0); fi" }.joined(separator: "; ")
        return ["unshare", "-m", "--propagation", "private", "sh", "-c", mounts + "; exec \"$@\"", "sh"] + command
    }

    @Test("two hosts running the packaged lockstepd without a toolchain find each other, and players on them start and stay within 2 ms")
    func packagedAgentsPlayInStep() async throws {
        let root = try #require(packageRoot)
        let lab = try Lab(hosts: 2, name: "package")
        defer { lab.destroy() }
        var pids: [Int32] = []
        for h in 1...2 {
            pids.append(try lab.spawn(
                h, "agent",
                Self.withoutToolchain([root + "/usr/bin/lockstepd", "--socket", lab.socket(h), "--state-dir", lab.hostDirectory(h) + "/state", "--name", "h\(h)"]),
                environment: ["LOCKSTEP_JOIN_CODE": lab.joinCode]))
            try lab.waitForSocket(h)
        }
        // The running agents are the package's, and map nothing from a Swift toolchain.
        for pid in pids {
            let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")
            #expect(exe == root + "/usr/bin/lockstepd")
            let maps = try String(contentsOfFile: "/proc/\(pid)/maps", encoding: .utf8)
            #expect(!maps.contains("/opt/swift") && !maps.contains("libswift") && !maps.contains("libFoundation"), "the packaged agent maps a Swift library")
        }
        #expect(try await waitUntil(timeout: 15) { try await lab.allReachable(among: [1, 2]) } != nil, "the packaged agents find each other")
        // The packaged CLI, toolchain hidden too, sees the peer.
        let peers = try lab.exec(1, Self.withoutToolchain([root + "/usr/bin/lockstep", "peers", "--socket", lab.socket(1)]))
        #expect(peers.contains("h2") && peers.contains("reachable"), "\(peers)")

        // Reference players (test instruments, not packaged) on both: one play, in step.
        try await Task.sleep(nanoseconds: 1_500_000_000)
        let ref = Lab.binDirectory + "/lockstep-refplayer"
        for h in 1...2 {
            try lab.spawn(h, "ref", [ref, "--socket", lab.socket(h), "--name", "ref\(h)", "--drift-ppm", String(h * 30 - 45), "--log", lab.hostDirectory(h) + "/ref.jsonl"])
        }
        #expect(try await waitUntil(timeout: 15) { try await lab.readyPlayers(on: 1) == 2 } != nil)
        let state: GroupStateView = try await lab.request(2, "command", CommandRequest(action: .play))
        let anchor = try #require(state.item?.hostTimeNs)
        try await Task.sleep(nanoseconds: 4_000_000_000)
        let traces = try (1...2).map { try PlayerTrace(name: "h\($0)", path: lab.hostDirectory($0) + "/ref.jsonl") }
        let atStart = try #require(positionSpread(traces, at: anchor + 50_000_000))
        #expect(atStart < 2_000_000, "start spread \(atStart) ns")
        let later = try #require(positionSpread(traces, at: anchor + 3_000_000_000))
        #expect(later < 2_000_000, "spread after 3 s \(later) ns")
        #expect(try #require(traces[0].position(at: anchor + 3_000_000_000)) > 2_500_000_000, "the players are playing")
    }
}
