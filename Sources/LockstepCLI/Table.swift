/// Plain-text tables for the CLI: a header row, aligned columns, two spaces between them. Cells
/// are escaped for the terminal (``Terminal``).
public struct Table: Sendable {
    public var headers: [String]
    public var rows: [[String]]

    public init(headers: [String], rows: [[String]] = []) {
        self.headers = headers
        self.rows = rows
    }

    public func render() -> String {
        let rows = rows.map { $0.map(Terminal.escaped) }
        var widths = headers.map(\.count)
        for row in rows {
            for (i, cell) in row.enumerated() where i < widths.count {
                widths[i] = max(widths[i], cell.count)
            }
        }
        func line(_ cells: [String]) -> String {
            var out = ""
            for (i, cell) in cells.enumerated() {
                let last = i == cells.count - 1
                out += last ? cell : cell + String(repeating: " ", count: widths[i] - cell.count + 2)
            }
            return out
        }
        return ([line(headers)] + rows.map(line)).joined(separator: "\n")
    }
}

/// Key/value lines for single objects ("status"); values are escaped for the terminal.
public struct Fields: Sendable {
    public var pairs: [(String, String)]

    public init(_ pairs: [(String, String)]) {
        self.pairs = pairs
    }

    public func render() -> String {
        let width = pairs.map(\.0.count).max() ?? 0
        return pairs.map { $0.0 + ":" + String(repeating: " ", count: width - $0.0.count + 1) + Terminal.escaped($0.1) }.joined(separator: "\n")
    }
}

/// Human renderings of durations and times.
public enum Human {
    /// `1h 02m`, `3m 04s`, `12.3s`, `450ms`, `12µs`, `800ns`.
    public static func duration(ns: Int64) -> String {
        let a = ns.magnitude  // abs(Int64.min) would trap
        let sign = ns < 0 ? "-" : ""
        switch a {
        case 3_600_000_000_000...:
            return sign + "\(a / 3_600_000_000_000)h " + pad2(a / 60_000_000_000 % 60) + "m"
        case 60_000_000_000...:
            return sign + "\(a / 60_000_000_000)m " + pad2(a / 1_000_000_000 % 60) + "s"
        case 1_000_000_000...:
            return sign + fixed(Double(a) / 1e9, 1) + "s"
        case 1_000_000...:
            return sign + fixed(Double(a) / 1e6, a < 10_000_000 ? 2 : 1) + "ms"
        case 1_000...:
            return sign + fixed(Double(a) / 1e3, a < 10_000 ? 1 : 0) + "µs"
        default:
            return sign + "\(a)ns"
        }
    }

    /// A media position: `1:02:03.450` or `2:03.450`.
    public static func position(ns: Int64) -> String {
        let ms = max(0, ns) / 1_000_000
        let h = ms / 3_600_000, m = ms / 60_000 % 60, s = ms / 1000 % 60, frac = ms % 1000
        let tail = pad2(s) + "." + String(repeating: "0", count: 3 - String(frac).count) + String(frac)
        return h > 0 ? "\(h):" + pad2(m) + ":" + tail : "\(m):" + tail
    }

    public static func fixed(_ v: Double, _ digits: Int) -> String {
        var p = 1.0
        for _ in 0..<digits { p *= 10 }
        let r = (v * p).rounded() / p
        var s = String(r)
        if let dot = s.firstIndex(of: ".") {
            let decimals = s.distance(from: dot, to: s.endIndex) - 1
            if digits == 0 { s = String(s[..<dot]) } else if decimals < digits { s += String(repeating: "0", count: digits - decimals) }
        } else if digits > 0 {
            s += "." + String(repeating: "0", count: digits)
        }
        return s
    }

    private static func pad2<T: BinaryInteger>(_ v: T) -> String { v < 10 ? "0\(v)" : "\(v)" }
}
