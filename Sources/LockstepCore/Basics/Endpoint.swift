/// A UDP endpoint of a peer: a numeric IPv4 or IPv6 address and a port.
///
/// IPv6 link-local addresses carry the interface index they are reachable through (`scope`),
/// as DNS-SD reports it. Endpoints are plain values so that the pure core can reason about
/// paths (which family, which interface) without touching sockets.
public enum Endpoint: Hashable, Sendable, CustomStringConvertible {
    /// IPv4 address in network byte order as four bytes `a.b.c.d`, and a port.
    case v4(a: UInt8, b: UInt8, c: UInt8, d: UInt8, port: UInt16)
    /// IPv6 address as 16 bytes, a port, and the interface index for link-local scope (0 if none).
    case v6(bytes: [UInt8], port: UInt16, scope: UInt32)

    public var port: UInt16 {
        switch self {
        case .v4(_, _, _, _, let port): return port
        case .v6(_, let port, _): return port
        }
    }

    public var isIPv4: Bool {
        if case .v4 = self { return true }
        return false
    }

    /// True for 127.0.0.0/8 and ::1: a path to ourselves or to a peer on the same host.
    public var isLoopback: Bool {
        switch self {
        case .v4(let a, _, _, _, _): return a == 127
        case .v6(let bytes, _, _): return bytes == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]
        }
    }

    /// True for fe80::/10.
    public var isLinkLocal: Bool {
        switch self {
        case .v4(let a, let b, _, _, _): return a == 169 && b == 254
        case .v6(let bytes, _, _): return bytes[0] == 0xfe && bytes[1] & 0xc0 == 0x80
        }
    }

    /// The same address with another port.
    public func with(port: UInt16) -> Endpoint {
        switch self {
        case .v4(let a, let b, let c, let d, _): return .v4(a: a, b: b, c: c, d: d, port: port)
        case .v6(let bytes, _, let scope): return .v6(bytes: bytes, port: port, scope: scope)
        }
    }

    /// The address without the port, e.g. `10.77.0.1` or `fe80::1%2`.
    public var host: String {
        switch self {
        case .v4(let a, let b, let c, let d, _):
            return "\(a).\(b).\(c).\(d)"
        case .v6(let bytes, _, let scope):
            var groups: [UInt16] = []
            for i in stride(from: 0, to: 16, by: 2) { groups.append(UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1])) }
            // Compress the longest run of two or more zero groups (RFC 5952).
            var bestStart = -1, bestLen = 0, runStart = -1
            for i in 0...8 {
                if i < 8 && groups[i] == 0 {
                    if runStart < 0 { runStart = i }
                } else if runStart >= 0 {
                    if i - runStart > bestLen { bestStart = runStart; bestLen = i - runStart }
                    runStart = -1
                }
            }
            var text = ""
            if bestLen >= 2 {
                text = groups[..<bestStart].map { String($0, radix: 16) }.joined(separator: ":")
                text += "::"
                text += groups[(bestStart + bestLen)...].map { String($0, radix: 16) }.joined(separator: ":")
            } else {
                text = groups.map { String($0, radix: 16) }.joined(separator: ":")
            }
            return scope != 0 ? "\(text)%\(scope)" : text
        }
    }

    /// `10.77.0.1:5000` or `[fe80::1%2]:5000`.
    public var description: String {
        isIPv4 ? "\(host):\(port)" : "[\(host)]:\(port)"
    }

    /// Parses a numeric address (IPv4 dotted quad, or IPv6 with optional `%scope` where the scope
    /// is a number) and a port. Host names are not resolved here.
    public init?(host: String, port: UInt16) {
        if let v4 = Endpoint.parseIPv4(host) {
            self = .v4(a: v4[0], b: v4[1], c: v4[2], d: v4[3], port: port)
            return
        }
        var addr = Substring(host)
        var scope: UInt32 = 0
        if let pct = addr.firstIndex(of: "%") {
            guard let s = UInt32(addr[addr.index(after: pct)...]) else { return nil }
            scope = s
            addr = addr[..<pct]
        }
        guard let bytes = Endpoint.parseIPv6(addr) else { return nil }
        self = .v6(bytes: bytes, port: port, scope: scope)
    }

    /// Parses `HOST:PORT` or `[HOST]:PORT` with a numeric host.
    public init?(_ text: String) {
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            let host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":"), let port = UInt16(rest.dropFirst()) else { return nil }
            self.init(host: host, port: port)
        } else {
            guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else { return nil }
            self.init(host: String(text[..<colon]), port: port)
        }
    }

    static func parseIPv4(_ s: some StringProtocol) -> [UInt8]? {
        let parts = s.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var out: [UInt8] = []
        for p in parts {
            guard !p.isEmpty, p.count <= 3, p.allSatisfy(\.isASCII), let v = UInt8(p) else { return nil }
            out.append(v)
        }
        return out
    }

    static func parseIPv6(_ s: Substring) -> [UInt8]? {
        guard !s.isEmpty, s.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { return nil }
        let halves = s.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ part: String) -> [UInt16]? {
            if part.isEmpty { return [] }
            var out: [UInt16] = []
            let fields = part.split(separator: ":", omittingEmptySubsequences: false)
            for (i, f) in fields.enumerated() {
                if f.contains(".") {
                    guard i == fields.count - 1, let v4 = parseIPv4(f) else { return nil }
                    out.append(UInt16(v4[0]) << 8 | UInt16(v4[1]))
                    out.append(UInt16(v4[2]) << 8 | UInt16(v4[3]))
                } else {
                    guard !f.isEmpty, f.count <= 4, let v = UInt16(f, radix: 16) else { return nil }
                    out.append(v)
                }
            }
            return out
        }
        guard let head = groups(halves[0]) else { return nil }
        var all: [UInt16]
        if halves.count == 2 {
            guard let tail = groups(halves[1]), head.count + tail.count < 8 else { return nil }
            all = head + Array(repeating: 0, count: 8 - head.count - tail.count) + tail
        } else {
            guard head.count == 8 else { return nil }
            all = head
        }
        return all.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xff)] }
    }
}

extension String {
    /// `components(separatedBy:)` without Foundation, for one separator string.
    fileprivate func components(separatedBy separator: String) -> [String] {
        var result: [String] = []
        var current = ""
        var rest = Substring(self)
        while let range = rest.firstRange(of: separator) {
            current += rest[..<range.lowerBound]
            result.append(current)
            current = ""
            rest = rest[range.upperBound...]
        }
        result.append(current + rest)
        return result
    }
}

extension Substring {
    fileprivate func components(separatedBy separator: String) -> [String] {
        String(self).components(separatedBy: separator)
    }
}
