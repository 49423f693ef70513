#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Names the field whose number does not fit its type (`1.5` or `2^63` for an integer, `-1` for
/// an unsigned one), which Foundation's `JSONDecoder` on Linux reports only as "The given data
/// was not valid JSON", with no field: a player would read `malformed: not a JSON object` for a
/// line that is a JSON object with one bad number.
///
/// Used only after decoding failed that way: every top-level number is replaced by 0 in turn,
/// and the first whose replacement lets the request decode (or fail for another reason) is the
/// field named. A line that is a JSON object with no such field still gets `invalid_field`.
enum NumberFit {
    static func locate<T: Decodable>(_ type: T.Type, in bytes: [UInt8]) -> ProtocolError? {
        guard (try? JSONDecoder().decode([String: Ignored].self, from: Data(bytes))) != nil else { return nil }
        guard let object = JSONValue.parsedObject(bytes) else {
            return ProtocolError(.invalidField, "a number does not fit its field (not an integer, or out of range)")
        }
        // At most 64 tries: a line with thousands of numbers must not cost thousands of decodes.
        for key in object.keys.sorted().prefix(64) {
            guard let text = numberText(object[key]) else { continue }
            var fixed = object
            fixed[key] = .int(0)
            guard let data = try? JSONEncoder().encode(JSONValue.object(fixed)) else { continue }
            if !stillBroken(T.self, data) {
                let shown = String(text.prefix(32))
                let integral = Double(text).map { $0.rounded() == $0 } ?? false
                return ProtocolError(.invalidField, integral
                    ? "\(key.prefix(64)) is out of range for its integer type, not \(shown) (see the ranges in the player protocol)"
                    : "\(key.prefix(64)) must be an integer, not \(shown)")
            }
        }
        return ProtocolError(.invalidField, "a number does not fit its field (not an integer, or out of range)")
    }

    /// Whether decoding `data` still fails with the field-less error.
    private static func stillBroken<T: Decodable>(_ type: T.Type, _ data: Data) -> Bool {
        do {
            _ = try JSONDecoder().decode(T.self, from: data)
            return false
        } catch DecodingError.dataCorrupted(let context) where context.codingPath.isEmpty {
            return true
        } catch {
            return false
        }
    }

    /// A number's text, as far as `Double` shows it; nil for anything else.
    private static func numberText(_ value: JSONValue?) -> String? {
        switch value {
        case .int(let i): String(i)
        case .double(let d): "\(d)"
        default: nil
        }
    }

    /// Any value, not looked at: decoding `[String: Ignored]` asks only whether a line is a JSON object.
    private struct Ignored: Decodable {
        init(from decoder: any Decoder) throws {}
    }
}
