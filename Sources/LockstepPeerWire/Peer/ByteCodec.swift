/// Big-endian writing into a byte array: the only way peer messages are built.
public struct ByteWriter: Sendable {
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = 128) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    @inline(__always) public mutating func u8(_ v: UInt8) { bytes.append(v) }
    @inline(__always) public mutating func u16(_ v: UInt16) { appendBE(v) }
    @inline(__always) public mutating func u32(_ v: UInt32) { appendBE(v) }
    @inline(__always) public mutating func u64(_ v: UInt64) { appendBE(v) }
    @inline(__always) public mutating func i64(_ v: Int64) { appendBE(UInt64(bitPattern: v)) }
    @inline(__always) public mutating func f64(_ v: Double) { appendBE(v.bitPattern) }
    @inline(__always) public mutating func raw(_ v: some Sequence<UInt8>) { bytes.append(contentsOf: v) }

    /// A UTF-8 string with a 16-bit length prefix. The caller enforces the field's own limit.
    public mutating func string(_ s: String) {
        let utf8 = Array(s.utf8)
        precondition(utf8.count <= Int(UInt16.max), "string field too long")
        u16(UInt16(utf8.count))
        raw(utf8)
    }

    @inline(__always)
    private mutating func appendBE<T: FixedWidthInteger>(_ v: T) {
        var be = v.bigEndian
        withUnsafeBytes(of: &be) { bytes.append(contentsOf: $0) }
    }
}

/// Why a peer message could not be decoded. Every case is a clear, countable reason.
public enum DecodeError: Error, Equatable, Sendable, CustomStringConvertible {
    case truncated(field: String)
    case tooLong(field: String, limit: Int)
    case invalid(field: String)
    /// A number outside the range the protocol allows for its field (`Protocol/peer-protocol.md` §4).
    case outOfRange(field: String, range: String)
    case unknownType(UInt8)
    case trailingBytes(Int)

    public var description: String {
        switch self {
        case .truncated(let f): return "truncated at \(f)"
        case .tooLong(let f, let limit): return "\(f) longer than \(limit)"
        case .invalid(let f): return "invalid \(f)"
        case .outOfRange(let f, let range): return "\(f) out of range (\(range))"
        case .unknownType(let t): return "unknown message type \(t)"
        case .trailingBytes(let n): return "\(n) bytes after the end of the message"
        }
    }
}

/// Big-endian reading with bounds checks: a malformed datagram gives a `DecodeError`, never a trap.
public struct ByteReader {
    private let bytes: [UInt8]
    public private(set) var offset: Int

    public init(_ bytes: [UInt8], offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    public var remaining: Int { bytes.count - offset }

    public mutating func u8(_ field: String) throws(DecodeError) -> UInt8 {
        guard remaining >= 1 else { throw .truncated(field: field) }
        defer { offset += 1 }
        return bytes[offset]
    }

    public mutating func u16(_ field: String) throws(DecodeError) -> UInt16 { try readBE(field) }
    public mutating func u32(_ field: String) throws(DecodeError) -> UInt32 { try readBE(field) }
    public mutating func u64(_ field: String) throws(DecodeError) -> UInt64 { try readBE(field) }
    public mutating func i64(_ field: String) throws(DecodeError) -> Int64 { Int64(bitPattern: try readBE(field) as UInt64) }

    /// A finite Double (NaN and infinities are refused: they would poison every computation after).
    public mutating func f64(_ field: String) throws(DecodeError) -> Double {
        let v = Double(bitPattern: try readBE(field) as UInt64)
        guard v.isFinite else { throw .invalid(field: field) }
        return v
    }

    public mutating func raw(_ count: Int, _ field: String) throws(DecodeError) -> ArraySlice<UInt8> {
        guard count >= 0, remaining >= count else { throw .truncated(field: field) }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    /// A UTF-8 string with a 16-bit length prefix, at most `limit` bytes.
    public mutating func string(_ field: String, limit: Int) throws(DecodeError) -> String {
        let n = Int(try u16(field))
        guard n <= limit else { throw .tooLong(field: field, limit: limit) }
        let slice = try raw(n, field)
        guard let s = String(validating: slice, as: UTF8.self) else { throw .invalid(field: field) }
        return s
    }

    /// An `i64` within `range` (the field's allowed values).
    public mutating func i64(_ field: String, within range: ClosedRange<Int64>) throws(DecodeError) -> Int64 {
        let v = try i64(field)
        guard range.contains(v) else { throw .outOfRange(field: field, range: "\(range.lowerBound)...\(range.upperBound)") }
        return v
    }

    /// A `u64` within `range`.
    public mutating func u64(_ field: String, within range: ClosedRange<UInt64>) throws(DecodeError) -> UInt64 {
        let v = try u64(field)
        guard range.contains(v) else { throw .outOfRange(field: field, range: "\(range.lowerBound)...\(range.upperBound)") }
        return v
    }

    /// A finite `f64` within `range`.
    public mutating func f64(_ field: String, within range: ClosedRange<Double>) throws(DecodeError) -> Double {
        let v = try f64(field)
        guard range.contains(v) else { throw .outOfRange(field: field, range: "\(range.lowerBound)...\(range.upperBound)") }
        return v
    }

    /// Throws if anything is left: a message must be exactly as long as its fields.
    public func expectEnd() throws(DecodeError) {
        if remaining != 0 { throw .trailingBytes(remaining) }
    }

    @inline(__always)
    private mutating func readBE<T: FixedWidthInteger>(_ field: String) throws(DecodeError) -> T {
        let size = MemoryLayout<T>.size
        guard remaining >= size else { throw .truncated(field: field) }
        var v: T = 0
        for i in 0..<size { v = v << 8 | T(bytes[offset + i]) }
        offset += size
        return v
    }
}
