#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LockstepCore

/// Where `lockstepd --web [ADDR:]PORT` listens: an address (IPv4, `[IPv6]`, or a name) and a
/// port. Without an address it is loopback (`127.0.0.1`): reachable from this machine only.
public struct WebEndpoint: Sendable, Equatable, CustomStringConvertible {
    /// The address to bind (as given; `127.0.0.1` by default).
    public var host: String
    /// The TCP port; 0 picks a free one (tests).
    public var port: Int

    public init(host: String = "127.0.0.1", port: Int) {
        self.host = host
        self.port = port
    }

    /// A value `--web` refuses.
    public struct Invalid: Error, Equatable, CustomStringConvertible {
        public var description: String
    }

    /// Parses `PORT`, `ADDR:PORT` or `[IPV6]:PORT`.
    public init(parsing text: String) throws(Invalid) {
        let spec = text.trimmed()
        var host = "127.0.0.1"
        var portText = Substring(spec)
        if spec.hasPrefix("[") {
            guard let close = spec.firstIndex(of: "]"), spec[spec.index(after: close)...].hasPrefix(":") else {
                throw Invalid(description: "--web takes [ADDR:]PORT, e.g. 8080, 0.0.0.0:8080 or [::1]:8080, not '\(spec.prefix(64))'")
            }
            host = String(spec[spec.index(after: spec.startIndex)..<close])
            portText = spec[spec.index(close, offsetBy: 2)...]
        } else if let colon = spec.lastIndex(of: ":") {
            guard !spec[..<colon].contains(":") else {
                throw Invalid(description: "--web: write an IPv6 address in brackets, e.g. [::1]:8080, not '\(spec.prefix(64))'")
            }
            host = String(spec[..<colon])
            portText = spec[spec.index(after: colon)...]
        }
        guard !host.isEmpty, host.utf8.count <= 253 else {
            throw Invalid(description: "--web: the address is 1...253 bytes, not '\(host.prefix(64))'")
        }
        guard let port = Int(portText), (0...65535).contains(port) else {
            throw Invalid(description: "--web: the port must be within 0...65535, not '\(portText.prefix(32))'")
        }
        self.init(host: host, port: port)
    }

    /// Whether only this machine can reach the endpoint.
    public var isLoopback: Bool { Self.isLoopback(host) }

    /// Whether `address` (an IP address or `localhost`) is on the loopback interface.
    public static func isLoopback(_ address: String) -> Bool {
        let a = address.lowercased()
        return a == "localhost" || a.hasPrefix("127.") || a == "::1" || a.hasPrefix("::ffff:127.")
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
