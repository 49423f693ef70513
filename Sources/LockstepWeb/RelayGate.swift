#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LockstepPlayerProtocol

/// What the relay does with each text frame a browser sends: answer a time request itself,
/// pass a player or dashboard request to the agent unchanged, or refuse it with a one-line
/// error in the player protocol's shape.
///
/// A browser is a player of this agent and a viewer of its group, nothing more: it may not manage
/// the group's key (`group_*`), change saved latencies, suspend other players or use test hooks.
public struct RelayGate: Sendable {
    /// Requests a browser may send: the player requests and the dashboard's read-and-control set.
    public static let allowedTypes: Set<String> = [
        "hello", "load", "join_group", "unload", "ready", "buffering", "intent", "play_immediately",
        "start_latency", "position", "begin_suspension", "end_suspension", "playback_status", "group_item",
        "status", "peers", "clock", "state", "command", "players", "subscribe",
    ]

    /// The longest frame passed on: the player socket's line limit.
    public static let maxFrameBytes = 65_536

    /// What to do with one frame.
    public enum Action: Sendable, Equatable {
        /// Answer with the time service (stamp the receipt now).
        case time(TimeExchange)
        /// Write this line to the agent (the frame as it came, newline added by the relay).
        case forward(String)
        /// Send this error line back to the browser; the agent never sees the frame.
        case refuse(String)
    }

    public init() {}

    /// Decides for one text frame.
    public func onFrame(_ text: String) -> Action {
        guard text.utf8.count <= Self.maxFrameBytes else {
            return .refuse(Self.error(nil, "oversized", "a message is at most \(Self.maxFrameBytes) bytes"))
        }
        guard let object = JSONValue.parsedObject(text.utf8) else {
            return .refuse(Self.error(nil, "malformed", "a message is one JSON object"))
        }
        let requestID = Self.requestID(object["request_id"])
        guard case .string(let type)? = object["type"] else {
            return .refuse(Self.error(requestID, "malformed", "a message needs a type"))
        }
        if type == "time" {
            guard let t1 = object["t1"]?.double, t1.isFinite, TimeExchange.t1Range.contains(t1) else {
                return .refuse(Self.error(requestID, "invalid_field", "t1 must be a performance.now() in ms within 0...31536000000"))
            }
            return .time(TimeExchange(t1: t1))
        }
        guard Self.allowedTypes.contains(type) else {
            return .refuse(Self.error(requestID, "unknown_type", "'\(type.prefix(32))' is not open to browsers"))
        }
        // Newlines inside a frame would split it into several lines on the player socket.
        guard !text.contains("\n"), !text.contains("\r") else {
            return .refuse(Self.error(requestID, "malformed", "a message is one line"))
        }
        return .forward(text)
    }

    /// A `request_id` as JSON text, if it is one the player protocol accepts (integer, or string ≤ 128 bytes).
    static func requestID(_ value: JSONValue?) -> String? {
        if let d = value?.double {
            guard d == d.rounded(), abs(d) < 9e15 else { return nil }
            return "\(Int64(d))"
        }
        if case .string(let s)? = value, s.utf8.count <= 128, let data = try? JSONEncoder().encode(s) {
            return String(decoding: data, as: UTF8.self)
        }
        return nil
    }

    static func error(_ requestID: String?, _ code: String, _ message: String) -> String {
        let escaped = message.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"")
        let id = requestID.map { "\"request_id\":\($0)," } ?? ""
        return "{\(id)\"ok\":false,\"error\":{\"code\":\"\(code)\",\"message\":\"\(escaped)\"}}"
    }
}
