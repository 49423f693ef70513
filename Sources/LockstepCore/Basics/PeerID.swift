/// A peer's stable identity: 128 random bits, created once and kept in the agent's state directory.
///
/// Written as 32 lowercase hex digits. Ordered (big-endian byte order), because the merge's
/// tie-breaks must be computed identically on every peer.
public struct PeerID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let high: UInt64
    public let low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// A new random identity.
    public static func random<G: RandomNumberGenerator>(using generator: inout G) -> PeerID {
        PeerID(high: generator.next(), low: generator.next())
    }

    public static func random() -> PeerID {
        var g = SystemRandomNumberGenerator()
        return random(using: &g)
    }

    /// Parses 32 hex digits (either case). Returns nil for anything else.
    public init?(hex: some StringProtocol) {
        let utf8 = Array(hex.utf8)
        guard utf8.count == 32 else { return nil }
        var words: [UInt64] = [0, 0]
        for (i, c) in utf8.enumerated() {
            guard let v = PeerID.hexValue(c) else { return nil }
            words[i / 16] = words[i / 16] << 4 | UInt64(v)
        }
        self.init(high: words[0], low: words[1])
    }

    /// The 16 bytes, big-endian.
    public var bytes: [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(16)
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: high >> UInt64(shift))) }
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: low >> UInt64(shift))) }
        return out
    }

    /// From 16 big-endian bytes.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 16 else { return nil }
        var h: UInt64 = 0
        var l: UInt64 = 0
        for (i, b) in bytes.enumerated() {
            if i < 8 { h = h << 8 | UInt64(b) } else { l = l << 8 | UInt64(b) }
        }
        self.init(high: h, low: l)
    }

    public var hex: String {
        PeerID.hexDigits(high) + PeerID.hexDigits(low)
    }

    /// The first 8 hex digits, for tables and logs.
    public var short: String { String(hex.prefix(8)) }

    public var description: String { hex }

    public static func < (a: PeerID, b: PeerID) -> Bool {
        (a.high, a.low) < (b.high, b.low)
    }

    /// `v` as 16 lowercase hex digits.
    public static func hexDigits(_ v: UInt64) -> String {
        Digits.padded(v, radix: 16, width: 16)
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

extension PeerID: Codable {
    public init(from decoder: any Decoder) throws {
        let s = try decoder.singleValueContainer().decode(String.self)
        guard let id = PeerID(hex: s) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "a peer id is 32 hex digits"))
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(hex)
    }
}
