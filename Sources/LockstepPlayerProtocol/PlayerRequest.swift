/// A request whose fields the agent checks when it decodes it: ``PlayerJSON/decode(_:from:)``
/// calls ``validate()`` for these, so a request that decoded is within ``PlayerLimits``.
public protocol PlayerRequest: Decodable {
    /// Throws `invalid_field`, naming the field and its range, for the first value out of range.
    func validate() throws(ProtocolError)
}

extension PlayerRequest {
    /// `value` (if present) within `range`, or `invalid_field` naming `field`.
    @inlinable
    public func check(_ field: String, _ value: Int64?, within range: ClosedRange<Int64>) throws(ProtocolError) {
        guard let value, !range.contains(value) else { return }
        throw ProtocolError(.invalidField, "\(field) must be within \(range.lowerBound)...\(range.upperBound), not \(value)")
    }

    /// `value` (if present) within `range`, or `invalid_field` naming `field`.
    @inlinable
    public func check(_ field: String, _ value: Double?, within range: ClosedRange<Double>) throws(ProtocolError) {
        guard let value, !range.contains(value) else { return }
        throw ProtocolError(.invalidField, "\(field) must be within \(range.lowerBound)...\(range.upperBound), not \(value)")
    }
}

/// A string-valued field with a closed set of values: decoding anything else is an
/// `invalid_field` error that lists the values.
public protocol ClosedStringEnum: RawRepresentable<String>, CaseIterable, Codable, Sendable, Hashable {}

extension ClosedStringEnum {
    public init(from decoder: any Decoder) throws {
        let raw = try decoder.singleValueContainer().decode(String.self)
        guard let value = Self(rawValue: raw) else {
            let allowed = Self.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "must be one of \(allowed), not \"\(String(raw.prefix(32)))\""))
        }
        self = value
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(rawValue)
    }
}
