import LockstepCore

/// The datagrams of pairing (`Protocol/peer-protocol.md` §2.4): sent before the joining device
/// holds any key, so outside the envelope, and protected by the SPAKE2 exchange itself.
///
///     "LP" | version (1) | type (1) | session id (8) | body
public enum PairingMessage: Equatable, Sendable {
    /// Joiner → inviter: the joiner's SPAKE2 message, padded to ``startBytes`` so that no answer
    /// is larger than the request (an unverified address gets no amplification).
    case start(session: UInt64, spake: [UInt8])
    /// Inviter → joiner: the inviter's SPAKE2 message and its key confirmation.
    case reply(session: UInt64, spake: [UInt8], confirm: [UInt8])
    /// Joiner → inviter: the joiner's key confirmation and, sealed, its device key and name.
    case finish(session: UInt64, confirm: [UInt8], sealed: [UInt8])
    /// Inviter → joiner: sealed, the group (id, epoch, key, name).
    case welcome(session: UInt64, sealed: [UInt8])
    /// Inviter → joiner: no open invite, or its attempts are used up (not authenticated: a hint).
    case refused(session: UInt64, reason: RefusalReason)

    public enum RefusalReason: UInt8, Sendable {
        case noInvite = 1
        case inviteClosed = 2
    }

    public static let magic: [UInt8] = [0x4C, 0x50]  // "LP"
    public static let version: UInt8 = 1
    public static let headerBytes = 12
    public static let startBytes = 256
    /// Sealed bodies: a device key, a length and a name of at most 64 bytes; a group id, epoch,
    /// key and name; each with a 16-byte tag.
    public static let maxSealedBytes = 16 + 4 + 32 + 1 + PeerMessage.maxNameBytes + 16

    public var session: UInt64 {
        switch self {
        case .start(let s, _), .reply(let s, _, _), .finish(let s, _, _), .welcome(let s, _), .refused(let s, _): s
        }
    }

    /// Whether `bytes` is a pairing datagram at all (its magic), before any parsing.
    public static func isPairing(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 2 && bytes[0] == magic[0] && bytes[1] == magic[1]
    }

    public func encoded() -> [UInt8] {
        var w = ByteWriter(capacity: Self.startBytes)
        w.raw(Self.magic)
        w.u8(Self.version)
        switch self {
        case .start(let s, let spake):
            w.u8(1)
            w.u64(s)
            w.raw(spake)
            w.raw([UInt8](repeating: 0, count: max(0, Self.startBytes - Self.headerBytes - spake.count)))
        case .reply(let s, let spake, let confirm):
            w.u8(2)
            w.u64(s)
            w.raw(spake)
            w.raw(confirm)
        case .finish(let s, let confirm, let sealed):
            w.u8(3)
            w.u64(s)
            w.raw(confirm)
            w.raw(sealed)
        case .welcome(let s, let sealed):
            w.u8(4)
            w.u64(s)
            w.raw(sealed)
        case .refused(let s, let reason):
            w.u8(5)
            w.u64(s)
            w.u8(reason.rawValue)
        }
        return w.bytes
    }

    /// Decodes a pairing datagram exactly (every length fixed or bounded), or says why not.
    public static func decode(_ bytes: [UInt8]) throws(DecodeError) -> PairingMessage {
        guard isPairing(bytes) else { throw .invalid(field: "magic") }
        var r = ByteReader(bytes, offset: 2)
        let version = try r.u8("version")
        guard version == Self.version else { throw .outOfRange(field: "version", range: "\(Self.version)") }
        let type = try r.u8("type")
        let session = try r.u64("session")
        let message: PairingMessage
        switch type {
        case 1:
            let spake = Array(try r.raw(32, "spake"))
            // Zeros only: one message, one encoding.
            guard try r.raw(Self.startBytes - Self.headerBytes - 32, "padding").allSatisfy({ $0 == 0 }) else { throw .invalid(field: "padding") }
            message = .start(session: session, spake: spake)
        case 2:
            message = .reply(session: session, spake: Array(try r.raw(32, "spake")), confirm: Array(try r.raw(32, "confirm")))
        case 3:
            let confirm = Array(try r.raw(32, "confirm"))
            message = .finish(session: session, confirm: confirm, sealed: try Self.sealed(&r))
        case 4:
            message = .welcome(session: session, sealed: try Self.sealed(&r))
        case 5:
            guard let reason = RefusalReason(rawValue: try r.u8("reason")) else { throw .invalid(field: "reason") }
            message = .refused(session: session, reason: reason)
        default:
            throw .unknownType(type)
        }
        try r.expectEnd()
        return message
    }

    private static func sealed(_ r: inout ByteReader) throws(DecodeError) -> [UInt8] {
        let rest = r.remaining
        guard (16...maxSealedBytes).contains(rest) else { throw .outOfRange(field: "sealed", range: "16...\(maxSealedBytes) bytes") }
        return Array(try r.raw(rest, "sealed"))
    }
}
