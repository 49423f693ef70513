import Foundation

/// A fresh directory under /tmp, removed when the test's closure returns. Short paths, because
/// Unix socket paths are limited to 107 bytes. Exactly 0700 whatever the umask: an agent refuses
/// a socket directory others can write to.
public func withTemporaryDirectory<T>(_ body: (String) async throws -> T) async rethrows -> T {
    let path = "/tmp/lkt-" + String(UInt32.random(in: 0...UInt32.max), radix: 36)
    try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    precondition(chmod(path, 0o700) == 0, "cannot make \(path) private")
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try await body(path)
}
