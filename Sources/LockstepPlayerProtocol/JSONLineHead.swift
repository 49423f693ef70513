/// Two top-level fields of a JSON line, read in one pass without building the document.
///
/// Each side of the player socket routes a line by one or two fields before decoding it whole:
/// the agent reads a request's `type` and `request_id`, the SDK an event's `event` or a reply's
/// `request_id`. With `JSONDecoder` that parsed every line twice, and at 64 lab hosts on two
/// cores the first parse was as costly as the second (docs/scale.md, thirty-third step). This
/// scan checks the whole line's syntax as it goes and keeps only the two fields.
///
/// It answers only when it is sure, and nil otherwise; the caller then decodes with
/// `JSONDecoder` as before, so that what is refused, and the error message, stay the same.
/// "Sure" is a subset of JSON that `JSONDecoder` reads the same way: the bytes are ASCII
/// (UTF-8 is left to the decoder to validate), strings hold no `\u` escape (surrogates), objects
/// and arrays nest at most ``maxDepth`` deep (the line's own object counts), and neither field
/// appears twice. A field's value is a string without escapes, an integer that fits `Int64`,
/// `null`, or ``Value/other``.
public enum JSONLineHead {
    /// A field's value as far as routing needs it.
    public enum Value: Sendable, Equatable {
        case string(String)
        case integer(Int64)
        case null
        /// Anything else (a number with a fraction or exponent, a string with escapes, a
        /// boolean, an object, an array): the caller decodes the line with `JSONDecoder`.
        case other
    }

    /// Nesting deeper than this (the line's object is 1) is left to `JSONDecoder`, whose own
    /// limit is higher.
    public static let maxDepth = 32

    /// The values of the top-level fields `first` and `second` (nil where absent), or nil when
    /// the line is not a JSON object this scan is sure of.
    public static func scan(_ line: [UInt8], _ first: StaticString, _ second: StaticString) -> (first: Value?, second: Value?)? {
        line.withUnsafeBufferPointer { bytes in
            var s = Scanner(bytes: bytes)
            return s.top(first, second)
        }
    }

    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        var i = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        var peek: UInt8? { i < bytes.count ? bytes[i] : nil }

        mutating func skipSpace() {
            while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x09 || bytes[i] == 0x0A || bytes[i] == 0x0D { i += 1 }
        }

        mutating func expect(_ b: UInt8) -> Bool {
            guard peek == b else { return false }
            i += 1
            return true
        }

        mutating func top(_ first: StaticString, _ second: StaticString) -> (first: Value?, second: Value?)? {
            skipSpace()
            guard expect(UInt8(ascii: "{")) else { return nil }
            var a: Value?, b: Value?
            skipSpace()
            if !expect(UInt8(ascii: "}")) {
                while true {
                    skipSpace()
                    guard let key = string(), !key.escaped else { return nil }
                    skipSpace()
                    guard expect(UInt8(ascii: ":")) else { return nil }
                    skipSpace()
                    let isFirst = matches(key.range, first), isSecond = !isFirst && matches(key.range, second)
                    if isFirst || isSecond {
                        guard let v = fieldValue() else { return nil }
                        if isFirst {
                            guard a == nil else { return nil }
                            a = v
                        } else {
                            guard b == nil else { return nil }
                            b = v
                        }
                    } else {
                        guard value(depth: 2) else { return nil }
                    }
                    skipSpace()
                    if expect(UInt8(ascii: ",")) { continue }
                    guard expect(UInt8(ascii: "}")) else { return nil }
                    break
                }
            }
            skipSpace()
            return i == bytes.count ? (a, b) : nil
        }

        func matches(_ range: Range<Int>, _ key: StaticString) -> Bool {
            guard range.count == key.utf8CodeUnitCount else { return false }
            let k = key.utf8Start
            for (n, j) in range.enumerated() where bytes[j] != k[n] { return false }
            return true
        }

        /// A named field's value; nil if the line is not valid (as far as this scan is sure).
        mutating func fieldValue() -> Value? {
            switch peek ?? 0 {
            case UInt8(ascii: "\""):
                guard let s = string() else { return nil }
                if s.escaped { return .other }
                return .string(String(decoding: UnsafeBufferPointer(rebasing: bytes[s.range]), as: UTF8.self))
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                let start = i
                guard let integral = number() else { return nil }
                guard integral else { return .other }
                return integer(start..<i).map { .integer($0) } ?? .other
            case UInt8(ascii: "n"):
                return literal("null") ? .null : nil
            default:
                return value(depth: 2) ? .other : nil
            }
        }

        /// Skips one value, checking its syntax.
        mutating func value(depth: Int) -> Bool {
            guard depth <= JSONLineHead.maxDepth else { return false }
            switch peek ?? 0 {
            case UInt8(ascii: "\""):
                return string() != nil
            case UInt8(ascii: "{"):
                i += 1
                skipSpace()
                if expect(UInt8(ascii: "}")) { return true }
                while true {
                    skipSpace()
                    guard string() != nil else { return false }
                    skipSpace()
                    guard expect(UInt8(ascii: ":")) else { return false }
                    skipSpace()
                    guard value(depth: depth + 1) else { return false }
                    skipSpace()
                    if expect(UInt8(ascii: ",")) { continue }
                    return expect(UInt8(ascii: "}"))
                }
            case UInt8(ascii: "["):
                i += 1
                skipSpace()
                if expect(UInt8(ascii: "]")) { return true }
                while true {
                    skipSpace()
                    guard value(depth: depth + 1) else { return false }
                    skipSpace()
                    if expect(UInt8(ascii: ",")) { continue }
                    return expect(UInt8(ascii: "]"))
                }
            case UInt8(ascii: "t"): return literal("true")
            case UInt8(ascii: "f"): return literal("false")
            case UInt8(ascii: "n"): return literal("null")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return number() != nil
            default: return false
            }
        }

        mutating func literal(_ word: StaticString) -> Bool {
            let n = word.utf8CodeUnitCount
            guard bytes.count - i >= n else { return false }
            for k in 0..<n where bytes[i + k] != word.utf8Start[k] { return false }
            i += n
            return true
        }

        /// A string at `i` (its contents' range, and whether it held an escape); nil if it is
        /// not one this scan is sure of (unterminated, a control character, a byte outside
        /// ASCII, a `\u` or unknown escape).
        mutating func string() -> (range: Range<Int>, escaped: Bool)? {
            guard expect(UInt8(ascii: "\"")) else { return nil }
            let start = i
            var escaped = false
            while i < bytes.count {
                let c = bytes[i]
                switch c {
                case UInt8(ascii: "\""):
                    i += 1
                    return (start..<(i - 1), escaped)
                case UInt8(ascii: "\\"):
                    guard i + 1 < bytes.count else { return nil }
                    switch bytes[i + 1] {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                        UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                        escaped = true
                        i += 2
                    default:
                        return nil
                    }
                case 0x00..<0x20, 0x80...0xFF:
                    return nil
                default:
                    i += 1
                }
            }
            return nil
        }

        /// A number at `i` (RFC 8259's grammar): whether it is an integer (no fraction, no
        /// exponent); nil if it is not a number.
        mutating func number() -> Bool? {
            _ = expect(UInt8(ascii: "-"))
            guard let d = peek, isDigit(d) else { return nil }
            i += 1
            if d != UInt8(ascii: "0") { while let c = peek, isDigit(c) { i += 1 } }
            var integral = true
            if expect(UInt8(ascii: ".")) {
                integral = false
                guard let c = peek, isDigit(c) else { return nil }
                while let c = peek, isDigit(c) { i += 1 }
            }
            if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
                integral = false
                i += 1
                if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { i += 1 }
                guard let c = peek, isDigit(c) else { return nil }
                while let c = peek, isDigit(c) { i += 1 }
            }
            return integral
        }

        func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }

        /// An integer literal's value, nil past `Int64`'s range.
        func integer(_ range: Range<Int>) -> Int64? {
            var j = range.lowerBound
            let negative = bytes[j] == UInt8(ascii: "-")
            if negative { j += 1 }
            var v: Int64 = 0
            while j < range.upperBound {
                let digit = Int64(bytes[j] - UInt8(ascii: "0"))
                let (m, o1) = v.multipliedReportingOverflow(by: 10)
                let (s, o2) = negative ? m.subtractingReportingOverflow(digit) : m.addingReportingOverflow(digit)
                guard !o1, !o2 else { return nil }
                v = s
                j += 1
            }
            return v
        }
    }
}
