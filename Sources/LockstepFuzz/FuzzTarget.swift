import LockstepPlayerProtocol
import LockstepPeerWire

/// The fuzz targets: each takes arbitrary bytes and traps when a property fails.
enum FuzzTarget: String, CaseIterable, Sendable {
    /// `PeerMessage.decode`, and the round trip of what it accepts.
    case peer
    /// `EnvelopeOpener.open` with fixed keys: raw datagrams, and scripted sequences of sealed ones.
    case envelope
    /// The player socket: `LineFrameDecoder`, then `RequestHeader` and every request type.
    case player
    /// `JoinCode.parse`, and the round trip of what it accepts.
    case joincode
    /// The protocol logic: decoded peer messages and raw player inputs driven into a `Node` and
    /// a `GroupMembers` (a hostile member, a buggy player).
    case node

    var summary: String {
        switch self {
        case .peer: "PeerMessage.decode never traps; accepted bytes are canonical and round-trip"
        case .envelope: "EnvelopeOpener.open never traps; authentic datagrams open once, replays and forgeries do not"
        case .player: "line framing matches a model of the protocol; request JSON decodes or errors, and round-trips"
        case .joincode: "JoinCode.parse never traps; accepted codes round-trip through make"
        case .node: "Node and GroupMembers never trap on decoded peer messages and raw player inputs; deadlines are never past"
        }
    }

    func run(_ bytes: [UInt8]) {
        switch self {
        case .peer: PeerMessageTarget.run(bytes)
        case .envelope: EnvelopeTarget.run(bytes)
        case .player: PlayerTarget.run(bytes)
        case .joincode: JoinCodeTarget.run(bytes)
        case .node: NodeTarget.run(bytes)
        }
    }

    /// Inputs made from valid encodings: the corpus libFuzzer starts from.
    var seeds: [(name: String, bytes: [UInt8])] {
        switch self {
        case .peer: PeerMessageTarget.seeds
        case .envelope: EnvelopeTarget.seeds
        case .player: PlayerTarget.seeds
        case .joincode: JoinCodeTarget.seeds
        case .node: NodeTarget.seeds
        }
    }

    /// Tokens worth inserting (a libFuzzer dictionary).
    var dictionary: [[UInt8]] {
        switch self {
        case .peer: []
        case .envelope: []
        case .player: PlayerTarget.dictionary
        case .joincode: JoinCodeTarget.dictionary
        case .node: []
        }
    }

    /// libFuzzer options for this target; arguments given to `fuzz` come after and override them.
    var libFuzzerDefaults: [String] {
        switch self {
        case .peer: ["-max_len=\(Envelope.maxMessageBytes)"]
        case .envelope: ["-max_len=\(Envelope.maxDatagramBytes + 1)"]
        case .player: ["-max_len=4096"]
        case .joincode: ["-max_len=256"]
        case .node: ["-max_len=8192"]
        }
    }
}

/// Traps with `message` unless `condition` holds: a property failed.
func require(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() { fatalError(message()) }
}

func hex(_ bytes: some Collection<UInt8>) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    for b in bytes { out += [digits[Int(b >> 4)], digits[Int(b & 15)]] }
    return String(decoding: out, as: UTF8.self)
}

/// Reads structured values from fuzz bytes; past the end it gives zeros, so every input means something.
struct FuzzInput {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isEmpty: Bool { offset >= bytes.count }

    mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// Big-endian.
    mutating func integer<T: FixedWidthInteger>(_: T.Type = T.self) -> T {
        var v: T = 0
        for _ in 0..<MemoryLayout<T>.size { v = v << 8 | T(byte()) }
        return v
    }

    mutating func bytes(_ count: Int) -> [UInt8] {
        let n = min(count, bytes.count - min(offset, bytes.count))
        defer { offset += n }
        return Array(bytes[offset..<offset + n])
    }

    mutating func rest() -> [UInt8] { bytes(bytes.count) }
}
