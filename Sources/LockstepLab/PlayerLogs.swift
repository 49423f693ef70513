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

    /// A group timeline as the player received it (a `timeline` line of its log).
    public struct Instruction: Sendable, Equatable {
        /// When the player got it (host ns).
        public var received: Int64
        /// When it took effect: the start of the segment it made (host ns).
        public var from: Int64
        public var rate: Double
        /// The command that set it: its origin's peer id and command number there.
        public var originPeerID: String
        public var originLamport: UInt64
    }

    public let name: String
    public private(set) var segments: [Segment] = []
    /// Every timeline the player received, in order (none is replaced by a later one).
    public private(set) var instructions: [Instruction] = []

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
            if let received = (object["received_host_ns"] as? NSNumber)?.int64Value, let peer = object["origin_peer_id"] as? String,
                let lamport = (object["origin_lamport"] as? NSNumber)?.uint64Value
            {
                instructions.append(Instruction(received: received, from: from, rate: rate, originPeerID: peer, originLamport: lamport))
            }
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

    /// The first timeline the player received that the command `lamport` of `peerID` set.
    public func instruction(from peerID: String, lamport: UInt64) -> Instruction? {
        instructions.first { $0.originPeerID == peerID && $0.originLamport == lamport }
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
