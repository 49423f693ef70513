import Foundation

/// What every benchmark prints: its parameters, its figures, and each goal with target,
/// measured value and whether it was met. Human text by default, one JSON object with `--json`.
struct Report: Encodable {
    struct Goal: Encodable {
        var name: String
        var target: String
        var measured: String
        var met: Bool
    }

    var benchmark: String
    var parameters: [String: String] = [:]
    var figures: [String: Double] = [:]
    /// Tables for humans (and kept in JSON for completeness), e.g. one row per scenario.
    var tables: [String: [[String: String]]] = [:]
    var goals: [Goal] = []
    var notes: [String] = []
    /// The machine the figures come from (kernel release, CPU model, cores): the same build
    /// measured on another day's machine of this lab gave other figures (docs/scale.md,
    /// twenty-eighth step), so every report says which one it ran on.
    var ranOn: [String: String] = Report.thisMachine()

    enum CodingKeys: String, CodingKey {
        case benchmark, parameters, figures, tables, goals, notes
        case ranOn = "ran_on"
    }

    mutating func goal(_ name: String, target: String, measured: String, met: Bool) {
        goals.append(Goal(name: name, target: target, measured: measured, met: met))
    }

    func print(json: Bool) {
        if json {
            let e = JSONEncoder()
            e.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            // A figure with no samples is NaN (no avahi-daemon to measure, say); JSON has no
            // NaN, and refusing it printed nothing at all.
            e.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
            do {
                Swift.print(String(decoding: try e.encode(self), as: UTF8.self))
            } catch {
                FileHandle.standardError.write(Data("cannot encode the report as JSON: \(error)\n".utf8))
            }
            return
        }
        Swift.print("== \(benchmark)")
        Swift.print("  ran on: " + ranOn.sorted(by: { $0.key < $1.key }).map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        for (k, v) in parameters.sorted(by: { $0.key < $1.key }) { Swift.print("  \(k): \(v)") }
        for (name, rows) in tables.sorted(by: { $0.key < $1.key }) {
            Swift.print("\n\(name)")
            guard let first = rows.first else { continue }
            let columns = first.keys.sorted()
            let order = (rows.first?["_order"]).map { $0.split(separator: ",").map(String.init) } ?? columns
            let cols = order.filter { $0 != "_order" }
            var widths = cols.map(\.count)
            for r in rows { for (i, c) in cols.enumerated() { widths[i] = max(widths[i], (r[c] ?? "").count) } }
            func line(_ cells: [String]) -> String {
                cells.enumerated().map { $0.element.padding(toLength: widths[$0.offset] + 2, withPad: " ", startingAt: 0) }.joined()
            }
            Swift.print("  " + line(cols))
            for r in rows { Swift.print("  " + line(cols.map { r[$0] ?? "" })) }
        }
        if !goals.isEmpty {
            Swift.print("\ngoals")
            for g in goals { Swift.print("  [\(g.met ? "met" : "NOT MET")] \(g.name): target \(g.target), measured \(g.measured)") }
        }
        for n in notes { Swift.print("note: \(n)") }
    }
}

extension Report {
    /// Kernel release, CPU model and active cores of this machine; what cannot be read is left out.
    static func thisMachine() -> [String: String] {
        var out = ["cores": String(ProcessInfo.processInfo.activeProcessorCount)]
        var name = utsname()
        if uname(&name) == 0 {
            out["kernel"] = withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        }
        if let cpuinfo = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
           let line = cpuinfo.split(separator: "\n").first(where: { $0.hasPrefix("model name") }),
           let colon = line.firstIndex(of: ":") {
            out["cpu"] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return out
    }
}

func fmt(_ v: Double, _ digits: Int = 3) -> String {
    v.isNaN ? "-" : String(format: "%.\(digits)f", v)
}
