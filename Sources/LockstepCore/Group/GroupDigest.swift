/// A summary of a ``GroupState`` for anti-entropy: stamps only, a few bytes per item.
public struct GroupDigest: Equatable, Hashable, Sendable, Codable {
    public struct Entry: Equatable, Hashable, Sendable, Codable {
        public var itemHash: UInt64
        public var stamp: Stamp
        public init(itemHash: UInt64, stamp: Stamp) {
            self.itemHash = itemHash
            self.stamp = stamp
        }
    }

    public var current: Stamp?
    public var items: [Entry]

    public init(current: Stamp?, items: [Entry]) {
        self.current = current
        self.items = items
    }
}
