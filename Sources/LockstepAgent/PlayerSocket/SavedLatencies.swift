#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LockstepPlayerProtocol

/// The output latencies the agent keeps per player name, in `STATE_DIR/latencies.json` (mode
/// 0600, written atomically):
///
///     {"version": 1, "output_latency_ns": {"living room tv": 80000000}}
///
/// Read back with every number range-checked: a file that does not parse, or an entry out of
/// range, is reported by one line (``parse(_:)``'s warning) and skipped, never trusted.
public struct SavedLatencies: Sendable, Equatable {
    public static let fileName = "latencies.json"
    /// At most this many names are kept (a file is input from outside, even our own).
    public static let maxEntries = 256

    public private(set) var byName: [String: Int64] = [:]

    public init(_ byName: [String: Int64] = [:]) {
        self.byName = byName
    }

    private struct File: Codable {
        var version: Int
        var outputLatencyNs: [String: Int64]

        enum CodingKeys: String, CodingKey {
            case version
            case outputLatencyNs = "output_latency_ns"
        }
    }

    /// The latencies in `text`, and a one-line warning when some (or all) were not usable.
    public static func parse(_ text: String) -> (SavedLatencies, warning: String?) {
        guard let file = try? JSONDecoder().decode(File.self, from: Data(text.utf8)), file.version == 1 else {
            return (SavedLatencies(), "\(fileName) is not a version-1 latency file; ignored")
        }
        var kept: [String: Int64] = [:]
        var skipped = 0
        for (name, ns) in file.outputLatencyNs.sorted(by: { $0.key < $1.key }) {
            guard kept.count < maxEntries, PlayerLimits.playerNameBytes.contains(name.utf8.count), PlayerLimits.latencyNs.contains(ns) else {
                skipped += 1
                continue
            }
            kept[name] = ns
        }
        let warning = skipped > 0 ? "\(fileName): \(skipped) entries out of range (names 1-32 bytes, latencies 0-10 s, at most \(maxEntries)); skipped" : nil
        return (SavedLatencies(kept), warning)
    }

    /// The file's text.
    public func text() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = (try? encoder.encode(File(version: 1, outputLatencyNs: byName))) ?? Data()
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    /// Keeps `ns` for `name`, or forgets it (nil). False when the table is full.
    public mutating func set(_ name: String, _ ns: Int64?) -> Bool {
        guard let ns else {
            byName[name] = nil
            return true
        }
        guard byName[name] != nil || byName.count < Self.maxEntries else { return false }
        byName[name] = ns
        return true
    }

    /// Every kept latency, by name.
    public var list: LatencyListResult {
        LatencyListResult(latencies: byName.sorted { $0.key < $1.key }.map { SavedLatency(name: $0.key, outputLatencyNs: $0.value) })
    }
}

extension StateDirectory {
    /// The kept latencies (none if the file is missing), and a warning if the file was not usable.
    public func savedLatencies() -> (SavedLatencies, warning: String?) {
        let file = path + "/" + SavedLatencies.fileName
        guard FileManager.default.fileExists(atPath: file) else { return (SavedLatencies(), nil) }
        guard let text = try? read(file) else { return (SavedLatencies(), "\(file) cannot be read; ignored") }
        return SavedLatencies.parse(text)
    }

    public func saveLatencies(_ latencies: SavedLatencies) throws {
        try write(path + "/" + SavedLatencies.fileName, latencies.text(), mode: 0o600)
    }
}
