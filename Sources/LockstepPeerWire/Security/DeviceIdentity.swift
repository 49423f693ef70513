import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LockstepCore

/// A device's long-term identity: an X25519 key pair kept (mode 0600) in its state directory.
///
/// The device's ``PeerID`` derives from the public key, so no member can claim another's id
/// for a key it does not hold; the ``MemberKey/fingerprint`` is what a person compares.
public struct DeviceIdentity: Sendable {
    public let privateKey: Curve25519.KeyAgreement.PrivateKey
    /// The public half, as members see it.
    public let member: MemberKey

    public init(privateKey: Curve25519.KeyAgreement.PrivateKey) {
        self.privateKey = privateKey
        self.member = MemberKey(bytes: Array(privateKey.publicKey.rawRepresentation))!
    }

    /// A new random identity.
    public static func generate() -> DeviceIdentity {
        DeviceIdentity(privateKey: Curve25519.KeyAgreement.PrivateKey())
    }

    /// An identity from its 32 private bytes (as stored); nil if they are not 32 bytes.
    public init?(rawRepresentation bytes: [UInt8]) {
        guard bytes.count == 32, let key = try? Curve25519.KeyAgreement.PrivateKey(rawRepresentation: bytes) else { return nil }
        self.init(privateKey: key)
    }

    public var rawRepresentation: [UInt8] { Array(privateKey.rawRepresentation) }
    public var peerID: PeerID { member.peerID }

    /// The key this device and `other` share within `groupID`: X25519 of the two static keys,
    /// through HKDF-SHA256 with both ids (in order) and the group id. Sealing under it reaches
    /// `other` alone, and only while both are members (a removed device's key is forgotten).
    /// Nil if `other`'s key is a low-order point (the shared secret would be all zeros).
    public func pairKey(with other: MemberKey, groupID: [UInt8]) -> GroupKey? {
        guard let theirs = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: other.bytes),
              let shared = try? privateKey.sharedSecretFromKeyAgreement(with: theirs) else { return nil }
        let raw = shared.withUnsafeBytes { Array($0) }
        guard raw.contains(where: { $0 != 0 }) else { return nil }
        let (a, b) = peerID < other.peerID ? (peerID, other.peerID) : (other.peerID, peerID)
        var info = Array("lockstep pair v1".utf8) + groupID
        info += a.bytes + b.bytes
        let key = HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: raw), info: info, outputByteCount: 32)
        return GroupKey(bytes: key.withUnsafeBytes { Array($0) }, epoch: GroupKey.pairEpoch)
    }
}

/// A member's public key (X25519, 32 bytes): its peer id and fingerprint derive from it.
public struct MemberKey: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]
    /// The first 16 bytes of SHA-256("lockstep device v1" ‖ key); its first 10 (80 bits) are the
    /// fingerprint. Kept, not recomputed: agents look it up on every timer tick.
    public let peerID: PeerID

    public init?(bytes: [UInt8]) {
        guard bytes.count == 32 else { return nil }
        // A SHA-256 digest always has 16 bytes to spare: this guard never fails.
        guard let id = PeerID(bytes: Array(SHA256.hash(data: Array("lockstep device v1".utf8) + bytes)).prefix(16)) else { return nil }
        self.bytes = bytes
        self.peerID = id
    }

    /// 80 bits in base32, four groups of four (`abcd-efgh-ijkl-mnop`): what a person compares
    /// between two screens before removing a device.
    public var fingerprint: String { Self.fingerprint(of: peerID) }

    /// The fingerprint of a peer id (the id is the digest the fingerprint is cut from).
    public static func fingerprint(of id: PeerID) -> String {
        let text = Base32.encode(Array(id.bytes.prefix(10)))
        return stride(from: 0, to: 16, by: 4).map { i in
            String(text[text.index(text.startIndex, offsetBy: i)..<text.index(text.startIndex, offsetBy: i + 4)])
        }.joined(separator: "-")
    }

    public var hex: String { Digits.hex(bytes) }

    public init?(hex: String) {
        let chars = Array(hex.utf8)
        guard chars.count == 64 else { return nil }
        var out: [UInt8] = []
        for i in stride(from: 0, to: 64, by: 2) {
            guard let v = UInt8(String(decoding: chars[i...i + 1], as: UTF8.self), radix: 16) else { return nil }
            out.append(v)
        }
        self.init(bytes: out)
    }

    public var description: String { fingerprint }
}
