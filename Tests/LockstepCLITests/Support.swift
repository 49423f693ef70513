import Foundation
import LockstepLab

/// Runs a built executable of this package (next to the test bundle) and returns its exit
/// status, stdout and stderr.
func runTool(_ name: String, _ arguments: [String], environment: [String: String]? = nil) throws -> (status: Int32, stdout: String, stderr: String) {
    let binDir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    let r = try Shell.run(binDir.appendingPathComponent(name).path, arguments, environment: environment)
    return (r.status, r.stdout, r.stderr)
}
