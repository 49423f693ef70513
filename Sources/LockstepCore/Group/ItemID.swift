/// The identity of a media item, as SharePlay defines it: the URL by default, or a custom
/// identifier chosen by the app (so a downloaded file and a stream of the same film match).
///
/// Commands only apply between peers playing the same `ItemID`.
public struct ItemID: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// At most this many UTF-8 bytes, so that a record fits one datagram. Longer URLs need a custom identifier.
    public static let maxBytes = 512

    public let value: String

    /// Nil when empty or longer than ``maxBytes``.
    public init?(_ value: String) {
        guard !value.isEmpty, value.utf8.count <= ItemID.maxBytes else { return nil }
        self.value = value
    }

    public init(from decoder: any Decoder) throws {
        let s = try decoder.singleValueContainer().decode(String.self)
        guard let id = ItemID(s) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "an item id is 1...\(ItemID.maxBytes) UTF-8 bytes"))
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(value)
    }

    public static func < (a: ItemID, b: ItemID) -> Bool { a.value.utf8.lexicographicallyPrecedes(b.value.utf8) }

    public var description: String { value }

    /// A 64-bit FNV-1a hash of the UTF-8 bytes: the same on every platform and run (Swift's
    /// `Hasher` is seeded per process), so digests can name items compactly.
    public var stableHash: UInt64 {
        FNV1a.hash(value.utf8)
    }
}
