import Foundation

/// Reads the reference player's JSON-lines logs back into its true playback: every segment it
/// applied, in order, so that its media position at any host time can be computed exactly.
public struct PlayerTrace: Sendable {
    public struct Segment: Sendable, Equatable {
        public var from: Int64
        public var position: Int64
        public var rate: Double
        public var cause: String
    }

    public let name: String
    public private(set) var segments: [Segment] = []

    public init(name: String, lines: some Sequence<Substring>) {
        self.name = name
        for line in lines {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                object["kind"] as? String == "segment", let seg = object["segment"] as? [String: Any],
                let from = (seg["from_host_ns"] as? NSNumber)?.int64Value, let position = (seg["position_ns"] as? NSNumber)?.int64Value,
                let rate = (seg["rate"] as? NSNumber)?.doubleValue
            else { continue }
            // The player replaces any segment scheduled at or after a new one's start.
            segments.removeAll { $0.from >= from }
            segments.append(Segment(from: from, position: position, rate: rate, cause: object["cause"] as? String ?? ""))
        }
    }

    /// Reads `path`.
    public init(name: String, path: String) throws {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        self.init(name: name, lines: text.split(separator: "\n"))
    }

    /// The true media position at host time `t` (nil before the first segment).
    public func position(at t: Int64) -> Int64? {
        guard let s = segments.last(where: { $0.from <= t }) else { return nil }
        return s.position + Int64((Double(t - s.from) * s.rate).rounded())
    }

    /// True if the player was moving at host time `t`.
    public func isPlaying(at t: Int64) -> Bool {
        (segments.last { $0.from <= t }?.rate ?? 0) > 0
    }

    /// Segments that began in [from, to), e.g. the starts after a command.
    public func segments(from: Int64, to: Int64) -> [Segment] {
        segments.filter { $0.from >= from && $0.from < to }
    }
}

/// Spread of the players' positions at host time `t`: max − min (ns), over those that have a
/// position then.
public func positionSpread(_ traces: [PlayerTrace], at t: Int64) -> Int64? {
    let positions = traces.compactMap { $0.position(at: t) }
    guard positions.count == traces.count, let lo = positions.min(), let hi = positions.max() else { return nil }
    return hi - lo
}
