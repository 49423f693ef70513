import Foundation


/// Runs a tool on a thread of its own: waiting for it on one of the cooperative pool's threads
/// (two on a 2-core machine) could starve the in-process agent it talks to when two suites do
/// it at once.
func runToolOffPool(_ name: String, _ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
    try await withCheckedThrowingContinuation { c in
        Thread { c.resume(with: Result { try runTool(name, arguments) }) }.start()
    }
}
