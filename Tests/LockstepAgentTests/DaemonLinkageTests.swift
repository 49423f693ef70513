#if os(Linux)
import Foundation
import Testing

/// `lockstepd` links FoundationEssentials, not full Foundation: full Foundation with its
/// internationalisation and ICU libraries costs every agent about 6 MiB of resident code pages
/// (docs/scale.md, "Memory"). One `import Foundation` in the agent's modules, or a dependency's,
/// brings them back; this test says so before a benchmark does.
@Suite struct DaemonLinkageTests {
    /// The built `lockstepd` beside this test binary (or in `LOCKSTEP_BIN`).
    static var daemon: String {
        let bin = ProcessInfo.processInfo.environment["LOCKSTEP_BIN"]
            ?? URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent().path
        return bin + "/lockstepd"
    }

    @Test func lockstepdNeedsNoFullFoundationLibrary() throws {
        let path = Self.daemon
        try #require(FileManager.default.isExecutableFile(atPath: path), "no lockstepd at \(path): build all products first (swift build --build-tests)")
        let readelf = Process()
        readelf.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        readelf.arguments = ["readelf", "-d", path]
        let pipe = Pipe()
        readelf.standardOutput = pipe
        try readelf.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        readelf.waitUntilExit()
        try #require(readelf.terminationStatus == 0 && output.contains("(NEEDED)"), "readelf -d \(path) failed")
        let needed = output.split(separator: "\n").filter { $0.contains("(NEEDED)") }.compactMap { line in
            line.split(separator: "[").last?.split(separator: "]").first.map(String.init)
        }
        for library in ["libFoundation.so", "libFoundationInternationalization.so", "lib_FoundationICU.so", "libFoundationNetworking.so"] {
            // An incremental build keeps the link entries of objects it did not recompile: after
            // an `import Foundation` is taken out, `swift package clean` before believing this.
            #expect(!needed.contains(library), "lockstepd needs \(library); its modules must import FoundationEssentials only")
        }
    }
}
#endif
