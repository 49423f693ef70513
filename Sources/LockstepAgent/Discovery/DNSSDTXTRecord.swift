/// DNS-SD TXT record data as a dictionary (RFC 6763 §6), without the C `TXTRecord*` helpers.
///
/// The record is a sequence of length-prefixed strings, each `key=value`:
///
/// ```
/// +-----+---------------------+-----+-----------------+
/// | 0x0b| v e r = 1 . 2 . 0   | 0x06| g r o u p =     |  ...
/// +-----+---------------------+-----+-----------------+
///   len   key '=' value (≤ 255 bytes)
/// ```
///
/// Terms and choices:
/// - Keys are case-insensitive (RFC 6763 §6.4): ``encode(_:)`` writes them lowercased and refuses
///   two keys that differ only in case; ``decode(_:)`` lowercases them.
/// - A key is 1 or more printable US-ASCII characters (0x20–0x7E) other than `=`.
/// - `key` alone (a boolean attribute) and `key=` both decode to `""`: a `[String: String]`
///   cannot tell them apart. Encoding always writes `key=value`.
/// - Values are UTF-8 text here; an entry whose value is not valid UTF-8 is skipped on decode.
/// - When a key occurs twice, the first wins (RFC 6763 §6.4). A length byte that runs past the
///   end ends decoding; what came before is kept.
/// - An empty dictionary encodes to the single empty string `[0]` (a TXT record may not be empty).
/// - Limits: an entry is at most 255 bytes (the length byte), the whole record at most
///   ``maxRecordBytes`` (1300, RFC 6763 §6.3: larger records do not fit one Ethernet packet).
public enum TXTRecord {
    /// The longest `key=value` entry: its length must fit the one-byte prefix.
    public static let maxEntryBytes = 255
    /// The longest record ``encode(_:)`` produces (RFC 6763 §6.3 advises staying under 1300).
    public static let maxRecordBytes = 1300

    /// Encodes `txt`, keys lowercased and sorted, so equal dictionaries give equal bytes.
    public static func encode(_ txt: [String: String]) throws(TXTRecordError) -> [UInt8] {
        var entries: [(key: String, value: String)] = []
        var seen: Set<String> = []
        for (key, value) in txt {
            guard !key.isEmpty else { throw .emptyKey }
            guard key.utf8.allSatisfy({ $0 >= 0x20 && $0 <= 0x7e && $0 != UInt8(ascii: "=") }) else {
                throw .invalidKey(key)
            }
            let lower = asciiLowercased(key)
            guard seen.insert(lower).inserted else { throw .duplicateKey(lower) }
            entries.append((lower, value))
        }
        if entries.isEmpty { return [0] }
        entries.sort { $0.key < $1.key }
        var out: [UInt8] = []
        for (key, value) in entries {
            let length = key.utf8.count + 1 + value.utf8.count
            guard length <= maxEntryBytes else { throw .entryTooLong(key: key, bytes: length) }
            out.append(UInt8(length))
            out.append(contentsOf: key.utf8)
            out.append(UInt8(ascii: "="))
            out.append(contentsOf: value.utf8)
        }
        guard out.count <= maxRecordBytes else { throw .recordTooLong(bytes: out.count) }
        return out
    }

    /// Decodes TXT record data leniently (see the type's documentation for what is skipped).
    public static func decode(_ bytes: [UInt8]) -> [String: String] {
        var result: [String: String] = [:]
        var i = 0
        while i < bytes.count {
            let length = Int(bytes[i])
            i += 1
            guard length <= bytes.count - i else { break }
            let entry = bytes[i..<(i + length)]
            i += length
            let equals = entry.firstIndex(of: UInt8(ascii: "=")) ?? entry.endIndex
            let keyBytes = entry[entry.startIndex..<equals]
            guard !keyBytes.isEmpty, keyBytes.allSatisfy({ $0 >= 0x20 && $0 <= 0x7e }) else { continue }
            let key = asciiLowercased(String(decoding: keyBytes, as: UTF8.self))
            guard result[key] == nil else { continue }
            let valueBytes = equals < entry.endIndex ? entry[(equals + 1)...] : entry[equals..<equals]
            guard let value = String(validating: valueBytes, as: UTF8.self) else { continue }
            result[key] = value
        }
        return result
    }

    private static func asciiLowercased(_ s: String) -> String {
        String(decoding: s.utf8.map { $0 >= 0x41 && $0 <= 0x5a ? $0 + 0x20 : $0 }, as: UTF8.self)
    }
}

/// Why a dictionary cannot be encoded as TXT record data.
public enum TXTRecordError: Error, Hashable, Sendable {
    /// A key is the empty string.
    case emptyKey
    /// A key contains `=` or a character outside printable US-ASCII.
    case invalidKey(String)
    /// Two keys differ only in case (TXT keys are case-insensitive); the lowercased key.
    case duplicateKey(String)
    /// `key=value` is longer than ``TXTRecord/maxEntryBytes``.
    case entryTooLong(key: String, bytes: Int)
    /// The whole record is longer than ``TXTRecord/maxRecordBytes``.
    case recordTooLong(bytes: Int)
}
