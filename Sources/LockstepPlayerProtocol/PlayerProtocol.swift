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

/// The player socket protocol: line-delimited JSON between the local agent and its clients
/// (players, the `lockstep` CLI, tools). Specified in `Protocol/player-protocol.md`.
///
/// Requests carry `type` and an optional `request_id` (number or string); a request with an id
/// gets exactly one reply with the same id, `ok` and either `result` or `error`. Requests without
/// an id are fire-and-forget (position reports). Unsolicited messages carry `event`.
public enum PlayerProtocol {
    /// The protocol version this build speaks. A client says which it speaks in `hello`.
    public static let version = 1
    /// The longest line the agent accepts; longer lines get an `oversized` error and are dropped.
    public static let maxLineBytes = 64 * 1024

    /// The agent's socket path when none is given: `$XDG_RUNTIME_DIR/lockstep/agent.sock`, or
    /// `/run/lockstep/agent.sock` for root, or `/tmp/lockstep-UID/agent.sock` without a runtime dir.
    /// `LOCKSTEP_SOCKET` overrides all of them.
    public static func defaultSocketPath(environment: [String: String] = ProcessInfo.processInfo.environment, uid: UInt32 = getuid()) -> String {
        if let explicit = environment["LOCKSTEP_SOCKET"], !explicit.isEmpty { return explicit }
        if uid == 0 { return "/run/lockstep/agent.sock" }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty { return runtime + "/lockstep/agent.sock" }
        return "/tmp/lockstep-\(uid)/agent.sock"
    }
}

/// A request id: clients may use numbers or strings; replies echo it unchanged.
public enum RequestID: Hashable, Sendable, Codable, CustomStringConvertible {
    case number(Int64)
    case string(String)

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let n = try? c.decode(Int64.self) {
            self = .number(n)
        } else if let s = try? c.decode(String.self), s.utf8.count <= 128 {
            self = .string(s)
        } else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "request_id must be an integer or a string of at most 128 bytes"))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .number(let n): try c.encode(n)
        case .string(let s): try c.encode(s)
        }
    }

    public var description: String {
        switch self {
        case .number(let n): String(n)
        case .string(let s): s
        }
    }
}

/// A protocol error: a stable machine-readable `code` and a one-line human `message`.
public struct ProtocolError: Error, Equatable, Sendable, Codable, CustomStringConvertible {
    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public enum Code: String, Sendable, Codable, Equatable {
        /// The line is not a JSON object.
        case malformed
        /// A line longer than ``PlayerProtocol/maxLineBytes``.
        case oversized
        /// `type` names no request this agent knows.
        case unknownType = "unknown_type"
        /// A field is missing, of the wrong type or out of range.
        case invalidField = "invalid_field"
        /// The client speaks a protocol version this agent does not.
        case unsupportedVersion = "unsupported_version"
        /// The request needs `hello` with role `player` first.
        case notAPlayer = "not_a_player"
        /// The request is valid but cannot be carried out now (e.g. no item loaded).
        case invalidState = "invalid_state"
        /// Too many requests or connections.
        case overloaded
        /// Something failed inside the agent; the message says what.
        case `internal`
        /// A code from a newer agent that this build does not know.
        case unknown

        public init(from decoder: any Decoder) throws {
            let raw = try decoder.singleValueContainer().decode(String.self)
            self = Code(rawValue: raw) ?? .unknown
        }
    }

    public var description: String { "\(code.rawValue): \(message)" }
}

/// The first fields of every request line.
public struct RequestHeader: Decodable, Sendable {
    public var type: String
    public var requestID: RequestID?

    enum CodingKeys: String, CodingKey {
        case type
        case requestID = "request_id"
    }

    /// The header of `line`, read without decoding it (``JSONLineHead``); nil when the scan is
    /// not sure, or the fields are not what `init(from:)` takes: decode it then.
    public init?(scanning line: [UInt8]) {
        guard let (type, id) = JSONLineHead.scan(line, "type", "request_id"), case .string(let t)? = type,
            let requestID = RequestID.scanned(id)
        else { return nil }
        self.type = t
        self.requestID = requestID
    }
}

extension RequestID {
    /// The `request_id` a scan found (``JSONLineHead``), as `init(from:)` would decode it: the
    /// outer nil when that needs the decoder, the inner one when the field is absent or null.
    public static func scanned(_ value: JSONLineHead.Value?) -> RequestID?? {
        switch value {
        case nil, .null?: return .some(nil)
        case .integer(let n)?: return .some(.number(n))
        case .string(let s)? where s.utf8.count <= 128: return .some(.string(s))
        default: return nil
        }
    }
}

/// A reply line: `{"request_id":…,"ok":true,"result":{…}}` or `{"request_id":…,"ok":false,"error":{…}}`.
public struct ReplyLine<Result: Encodable & Sendable>: Encodable, Sendable {
    public var requestID: RequestID?
    public var ok: Bool
    public var result: Result?
    public var error: ProtocolError?

    enum CodingKeys: String, CodingKey {
        case requestID = "request_id"
        case ok, result, error
    }

    public init(requestID: RequestID?, ok: Bool, result: Result?, error: ProtocolError?) {
        self.requestID = requestID
        self.ok = ok
        self.result = result
        self.error = error
    }

    public static func success(_ id: RequestID?, _ result: Result) -> ReplyLine { ReplyLine(requestID: id, ok: true, result: result, error: nil) }
}

/// An empty result, for requests that only succeed or fail.
public struct EmptyResult: Codable, Sendable, Equatable {
    public init() {}
}

/// JSON with the protocol's conventions: compact, keys sorted (stable output for tests and diffs).
public enum PlayerJSON {
    public static func encode(_ value: some Encodable) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(value))
    }

    /// Decodes a request and checks its numbers against ``PlayerLimits`` (``PlayerRequest/validate()``).
    public static func decode<T: PlayerRequest>(_ type: T.Type, from bytes: [UInt8]) throws(ProtocolError) -> T {
        let request: T
        do {
            request = try decodeUnchecked(T.self, from: bytes)
        } catch where error.code == .malformed {
            throw NumberFit.locate(T.self, in: bytes) ?? error
        }
        try request.validate()
        return request
    }

    /// Decodes any value (replies and events on the client side; requests go through the checked overload).
    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws(ProtocolError) -> T {
        try decodeUnchecked(T.self, from: bytes)
    }

    private static func decodeUnchecked<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws(ProtocolError) -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(bytes))
        } catch let error as DecodingError {
            throw describe(error)
        } catch {
            throw ProtocolError(.malformed, "not JSON: \(error)")
        }
    }

    /// Turns a `DecodingError` into one readable line naming the field.
    public static func describe(_ error: DecodingError) -> ProtocolError {
        func path(_ ctx: DecodingError.Context) -> String {
            ctx.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let ctx):
            let p = path(ctx)
            return ProtocolError(.invalidField, "missing field \(p.isEmpty ? key.stringValue : p + "." + key.stringValue)")
        case .typeMismatch(let type, let ctx):
            if ctx.codingPath.isEmpty { return ProtocolError(.malformed, "not a JSON object") }
            return ProtocolError(.invalidField, "field \(path(ctx)) must be \(describe(type))")
        case .valueNotFound(let type, let ctx):
            return ProtocolError(.invalidField, "field \(path(ctx)) must be \(describe(type)), not null")
        case .dataCorrupted(let ctx):
            if ctx.codingPath.isEmpty { return ProtocolError(.malformed, "not a JSON object") }
            return ProtocolError(.invalidField, "field \(path(ctx)): \(ctx.debugDescription)")
        @unknown default:
            return ProtocolError(.malformed, "\(error)")
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is Int.Type, is Int64.Type, is Int32.Type, is UInt32.Type, is UInt64.Type: "an integer"
        case is Double.Type, is Float.Type: "a number"
        case is String.Type: "a string"
        case is Bool.Type: "true or false"
        default: "\(type)".hasPrefix("Array") ? "an array" : "an object"
        }
    }
}

/// A successful reply whose result type is only known at run time.
public struct AnyReply: Encodable, Sendable {
    public var requestID: RequestID
    public var result: any Encodable & Sendable

    public init(requestID: RequestID, result: any Encodable & Sendable) {
        self.requestID = requestID
        self.result = result
    }

    enum CodingKeys: String, CodingKey {
        case requestID = "request_id"
        case ok, result
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(requestID, forKey: .requestID)
        try c.encode(true, forKey: .ok)
        try c.encode(result, forKey: .result)
    }
}
