/// 64-bit FNV-1a: a hash that is the same on every platform and run (Swift's `Hasher` is seeded
/// per process), for naming things compactly on the wire (item hashes in digests) and for
/// fingerprints of the group state that two agents can compare.
public enum FNV1a {
    public static func hash(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes {
            h ^= UInt64(b)
            h = h &* 0x0000_0100_0000_01b3
        }
        return h
    }

    /// The hash as 16 hex digits.
    public static func hex(_ bytes: some Sequence<UInt8>) -> String {
        PeerID.hexDigits(hash(bytes))
    }
}
