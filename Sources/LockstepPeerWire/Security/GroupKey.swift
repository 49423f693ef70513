import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LockstepCore

/// The shared secret that makes a group: only agents holding it can read or send its datagrams.
///
/// A key has an `epoch`, raised by each rotation; datagrams name the epoch they were sealed
/// with (its low byte), so agents can accept the previous key during a rotation.
public struct GroupKey: Sendable, Equatable {
    public let bytes: [UInt8]
    public let epoch: UInt32
    /// HKDF-SHA256's expand step keyed once with this key's pseudorandom key (the extract step,
    /// no salt): each datagram key is then one HMAC over its info, which matters because a
    /// stranger can make the agent derive one per junk datagram (a new sender in each).
    private let expander: HMAC<SHA256>

    public init?(bytes: [UInt8], epoch: UInt32) {
        guard bytes.count == 32 else { return nil }
        self.bytes = bytes
        self.epoch = epoch
        // RFC 5869: no salt is HashLen zero bytes (the same HMAC key as an empty one).
        let prk = HMAC<SHA256>.authenticationCode(for: bytes, using: SymmetricKey(data: [UInt8](repeating: 0, count: 32)))
        expander = HMAC<SHA256>(key: SymmetricKey(data: prk))
    }

    public static func == (a: GroupKey, b: GroupKey) -> Bool { a.bytes == b.bytes && a.epoch == b.epoch }

    /// The epoch of pairwise keys (``DeviceIdentity/pairKey(with:groupID:)``): its low byte,
    /// 0xFF, is never a group epoch's (``nextEpoch(after:)`` skips it), so a datagram's epoch
    /// byte says which kind of key sealed it.
    public static let pairEpoch: UInt32 = 0xFF
    public static let pairEpochByte: UInt8 = 0xFF
    /// The epoch of per-pair session keys (``PairSessions``), epoch byte 0xFE.
    public static let sessionEpoch: UInt32 = 0xFE
    public static let sessionEpochByte: UInt8 = 0xFE

    /// Whether `epoch` can be a group epoch: its low byte is neither the pairwise keys' nor the sessions'.
    public static func isGroupEpoch(_ epoch: UInt32) -> Bool {
        let b = UInt8(truncatingIfNeeded: epoch)
        return b != pairEpochByte && b != sessionEpochByte
    }

    /// The epoch after `epoch`, skipping those whose low byte is the pairwise keys' or the
    /// sessions' (nil at the end).
    public static func nextEpoch(after epoch: UInt32) -> UInt32? {
        guard epoch < UInt32.max - 3 else { return nil }
        var next = epoch + 1
        while !isGroupEpoch(next) { next += 1 }
        return next
    }

    /// A short id of this key (the first 4 bytes of SHA-256 of it): two keys of one epoch (made
    /// on both sides of a partition) are told apart, and the smaller id is the one both keep.
    public var keyID: UInt32 {
        Array(SHA256.hash(data: Array("lockstep key id v1".utf8) + bytes)).prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }

    /// A fresh random key.
    public static func random(epoch: UInt32 = 1) -> GroupKey {
        var g = SystemRandomNumberGenerator()
        return GroupKey(bytes: (0..<32).map { _ in UInt8.random(in: 0...255, using: &g) }, epoch: epoch)!
    }

    /// The tag published in DNS-SD TXT records on `day` (days since 1970-01-01, UTC): 8 bytes of
    /// HMAC-SHA256(group id, "lockstep group tag v2" ‖ day as u64 big-endian), hex. It lets agents
    /// skip other groups' services without trying them, and reveals nothing about the key. It is
    /// the same across rotations (the group id is, see ``GroupIdentity``), so members at any epoch
    /// recognise each other, and new every day, so that someone who does not hold the group id
    /// cannot link one day's services to the next (review finding L3).
    public static func tag(forGroupID id: [UInt8], day: Int64) -> String {
        var label = Array("lockstep group tag v2".utf8)
        withUnsafeBytes(of: UInt64(bitPattern: day).bigEndian) { label += $0 }
        return Digits.hex(Array(HMAC<SHA256>.authenticationCode(for: label, using: SymmetricKey(data: id))).prefix(8))
    }

    /// Today, by this device's wall clock.
    public static func tagDayNow() -> Int64 { tagDay(unixSeconds: Int64(Date().timeIntervalSince1970)) }

    /// The day (since 1970-01-01, UTC) of a wall-clock time in seconds since then.
    public static func tagDay(unixSeconds: Int64) -> Int64 {
        unixSeconds >= 0 ? unixSeconds / 86_400 : (unixSeconds + 1) / 86_400 - 1
    }

    /// A stable identifier of the group this key belongs to, derived from the key: rotated keys
    /// carry their group's id along (see ``GroupIdentity``).
    public var derivedGroupID: [UInt8] {
        let mac = HMAC<SHA256>.authenticationCode(for: Array("lockstep group id v1".utf8), using: SymmetricKey(data: bytes))
        return Array(Array(mac).prefix(16))
    }

    /// The key that seals datagrams from one sender incarnation under this group key.
    /// HKDF-SHA256(key, no salt, info = label ‖ sender ‖ incarnation ‖ epoch, 32 bytes): one
    /// block of output, T(1) = HMAC(PRK, info ‖ 0x01).
    func datagramKey(sender: PeerID, incarnation: UInt64) -> SymmetricKey {
        var info = Self.datagramLabel
        info.reserveCapacity(info.count + 16 + 8 + 4 + 1)
        withUnsafeBytes(of: sender.high.bigEndian) { info += $0 }
        withUnsafeBytes(of: sender.low.bigEndian) { info += $0 }
        withUnsafeBytes(of: incarnation.bigEndian) { info += $0 }
        withUnsafeBytes(of: epoch.bigEndian) { info += $0 }
        info.append(1)
        var h = expander
        h.update(data: info)
        return SymmetricKey(data: h.finalize())
    }

    private static let datagramLabel = Array("lockstep datagram v1".utf8)
}

/// A group as an agent keeps it: a local name, the group's id (stable across rotations), and
/// its current and previous keys.
///
/// Every way to make one (a key, a join code, a state file) checks the keys' lengths and the id,
/// so its keys are always usable.
public struct GroupIdentity: Sendable, Equatable, Codable {
    public var name: String
    /// 16 bytes, hex: fixed when the group is created, kept across key rotations.
    public private(set) var id: String
    public private(set) var key: [UInt8]
    public private(set) var epoch: UInt32
    /// The key before the last rotation, still accepted for a while.
    public private(set) var previousKey: [UInt8]?
    public private(set) var previousEpoch: UInt32?
    /// Who belongs to the group (absent from files written before members had keys: then
    /// every device that holds the key announces itself again, and the roster fills).
    public var roster = Roster()

    public init(name: String, key: GroupKey, groupID: [UInt8]? = nil) {
        self.name = name
        self.id = Digits.hex(groupID ?? key.derivedGroupID)
        self.key = key.bytes
        self.epoch = key.epoch
        self.previousKey = nil
        self.previousEpoch = nil
    }

    // (Both keys are 32 bytes: every initializer checks them.)
    public var currentKey: GroupKey { GroupKey(bytes: key, epoch: epoch)! }
    public var previous: GroupKey? {
        guard let k = previousKey, let e = previousEpoch else { return nil }
        return GroupKey(bytes: k, epoch: e)
    }

    public var idBytes: [UInt8] {
        var out: [UInt8] = []
        var chars = Array(id.utf8)
        if chars.count % 2 == 1 { chars.insert(UInt8(ascii: "0"), at: 0) }
        for i in stride(from: 0, to: chars.count, by: 2) {
            out.append(UInt8(String(decoding: chars[i...i + 1], as: UTF8.self), radix: 16) ?? 0)
        }
        return out
    }

    /// The public DNS-SD tag of this group on `day` (``GroupKey/tag(forGroupID:day:)``).
    public func tag(day: Int64) -> String { GroupKey.tag(forGroupID: idBytes, day: day) }

    /// The tags a member recognises on `day`: the day before's, its own and the day after's (two
    /// devices' clocks may put them on either side of midnight). (Agents of peer protocol 3
    /// published one permanent tag; they do not speak version 4, so it is not recognised.)
    public func recognisedTags(day: Int64) -> Set<String> { Set((day - 1...day + 1).map { tag(day: $0) }) }

    /// Today's tag, by this device's wall clock.
    public var tag: String { tag(day: GroupKey.tagDayNow()) }

    /// Installs `next` as the current key, keeping the current one as the previous.
    public mutating func rotate(to next: GroupKey) {
        guard next.epoch != epoch || next.bytes != key else { return }
        previousKey = key
        previousEpoch = epoch
        key = next.bytes
        epoch = next.epoch
    }

    /// A group's local name: 1-32 ASCII letters, digits, '-' or '_' (it names a file).
    public static func isValidName(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 32 && s.unicodeScalars.allSatisfy { ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || $0 == "-" || $0 == "_" }
    }

    /// Forgets the previous key (its grace period is over).
    public mutating func forgetPrevious() {
        previousKey = nil
        previousEpoch = nil
    }

    enum CodingKeys: String, CodingKey {
        case name, id, key, epoch
        case previousKey = "previous_key"
        case previousEpoch = "previous_epoch"
        case roster
    }

    /// Reads a saved group, refusing one whose keys or id are not what they must be (a corrupt
    /// or hand-edited file gives a clear error, never a trap or a silently different group).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        id = try c.decode(String.self, forKey: .id)
        key = try c.decode([UInt8].self, forKey: .key)
        epoch = try c.decode(UInt32.self, forKey: .epoch)
        previousKey = try c.decodeIfPresent([UInt8].self, forKey: .previousKey)
        previousEpoch = try c.decodeIfPresent(UInt32.self, forKey: .previousEpoch)
        roster = try c.decodeIfPresent(Roster.self, forKey: .roster) ?? Roster()
        guard GroupKey.isGroupEpoch(epoch), previousEpoch.map(GroupKey.isGroupEpoch) ?? true else {
            throw DecodingError.dataCorruptedError(forKey: .epoch, in: c, debugDescription: "a group epoch never ends in the byte 0xfe or 0xff (sessions and pairwise keys use them)")
        }
        guard key.count == 32 else {
            throw DecodingError.dataCorruptedError(forKey: .key, in: c, debugDescription: "a group key is 32 bytes, not \(key.count)")
        }
        guard id.utf8.count == 32, id.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }) else {
            throw DecodingError.dataCorruptedError(forKey: .id, in: c, debugDescription: "a group id is 32 lowercase hex digits")
        }
        guard (previousKey == nil) == (previousEpoch == nil), previousKey.map({ $0.count == 32 }) ?? true else {
            throw DecodingError.dataCorruptedError(forKey: .previousKey, in: c, debugDescription: "a previous key is 32 bytes, with its epoch")
        }
    }
}

/// The code that carries a group to another device: `lk1-` and base32 of
/// group id (16) ‖ key (32) ‖ epoch (4) ‖ checksum (2), in groups of five for typing.
public enum JoinCode {
    public static let prefix = "lk1-"

    public static func make(_ group: GroupIdentity) -> String {
        var payload = group.idBytes + group.key
        withUnsafeBytes(of: group.epoch.bigEndian) { payload += $0 }
        payload += checksum(payload)
        let text = Base32.encode(payload)
        var grouped: [String] = []
        var i = text.startIndex
        while i < text.endIndex {
            let j = text.index(i, offsetBy: 5, limitedBy: text.endIndex) ?? text.endIndex
            grouped.append(String(text[i..<j]))
            i = j
        }
        return prefix + grouped.joined(separator: "-")
    }

    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case notAJoinCode, badChecksum
        public var description: String {
            switch self {
            case .notAJoinCode: "not a Lockstep join code (it starts with \(JoinCode.prefix))"
            case .badChecksum: "the join code has a typo (checksum mismatch)"
            }
        }
    }

    /// Parses a code (case, dashes and spaces do not matter) into a group named `name`.
    public static func parse(_ code: String, name: String) throws(ParseError) -> GroupIdentity {
        let trimmed = code.trimmed().lowercased()
        guard trimmed.hasPrefix(prefix) else { throw .notAJoinCode }
        let body = trimmed.dropFirst(prefix.count).filter { $0 != "-" && $0 != " " }
        guard let payload = Base32.decode(String(body)), payload.count == 16 + 32 + 4 + 2 else { throw .notAJoinCode }
        let data = Array(payload[0..<52])
        guard checksum(data) == Array(payload[52...]) else { throw .badChecksum }
        let epoch = data[48..<52].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        // Epochs ending in 0xff are the pairwise keys' (no group has one), the last ones leave no room to rotate.
        guard GroupKey.isGroupEpoch(epoch), GroupKey.nextEpoch(after: epoch) != nil else { throw .notAJoinCode }
        let key = GroupKey(bytes: Array(data[16..<48]), epoch: epoch)!
        return GroupIdentity(name: name, key: key, groupID: Array(data[0..<16]))
    }

    private static func checksum(_ bytes: [UInt8]) -> [UInt8] {
        Array(SHA256.hash(data: bytes)).prefix(2).map { $0 }
    }
}

/// RFC 4648 base32, lowercase, no padding.
enum Base32 {
    static let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for b in bytes {
            buffer = buffer << 8 | UInt32(b)
            bits += 8
            while bits >= 5 {
                out.append(alphabet[Int((buffer >> UInt32(bits - 5)) & 31)])
                bits -= 5
            }
        }
        if bits > 0 { out.append(alphabet[Int((buffer << UInt32(5 - bits)) & 31)]) }
        return String(decoding: out, as: UTF8.self)
    }

    static func decode(_ text: String) -> [UInt8]? {
        var out: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for c in text.utf8 {
            guard let v = alphabet.firstIndex(of: c) else { return nil }
            buffer = buffer << 5 | UInt32(v)
            bits += 5
            if bits >= 8 {
                out.append(UInt8((buffer >> UInt32(bits - 8)) & 0xff))
                bits -= 8
            }
        }
        // Canonical only: the bits left over must be zero padding, or two texts would decode alike.
        if bits > 0 && buffer & ((1 << UInt32(bits)) - 1) != 0 { return nil }
        return out
    }
}
