import LockstepCore
import LockstepPeerWire
import Testing

/// `participant_digest` (peer protocol §4.9): each part says which peers it covers, and only a
/// canonical part decodes.
@Suite("Participant digest codec")
struct ParticipantDigestCodecTests {
    static func entry(_ i: UInt64) -> ParticipantDigest { ParticipantDigest(peer: PeerID(high: 0, low: i), incarnation: 1, version: i) }

    /// A part's bytes written by hand: flags, `after` (with bit 1), count, entries.
    static func bytes(flags: UInt8, after: UInt64?, entries: [UInt64]) -> [UInt8] {
        var out: [UInt8] = [0x19, flags]
        if let after { out += PeerID(high: 0, low: after).bytes }
        out.append(UInt8(entries.count))
        for e in entries {
            out += PeerID(high: 0, low: e).bytes
            out += withUnsafeBytes(of: UInt64(1).bigEndian, Array.init)
            out += withUnsafeBytes(of: e.bigEndian, Array.init)
        }
        return out
    }

    @Test("a whole digest, a first part, a middle part and a last part round-trip with their ranges")
    func ranges() throws {
        let parts: [PeerMessage] = [
            .participantDigest([], wantsReply: true),
            .participantDigest([Self.entry(1), Self.entry(2)], more: true, wantsReply: false),
            .participantDigest([Self.entry(3)], after: Self.entry(2).peer, more: true, wantsReply: false),
            .participantDigest([], after: Self.entry(3).peer, wantsReply: true),
        ]
        for part in parts { #expect(try PeerMessage.decode(part.encoded()) == part) }
        #expect(try PeerMessage.decode(Self.bytes(flags: 6, after: 2, entries: [3, 4])) == .participantDigest([Self.entry(3), Self.entry(4)], after: Self.entry(2).peer, more: true, wantsReply: false))
    }

    @Test("entries out of order, repeated or not after `after`, a part followed by more with no entry, or an unknown flag are malformed")
    func refused() {
        for bad in [
            Self.bytes(flags: 0, after: nil, entries: [2, 1]),
            Self.bytes(flags: 0, after: nil, entries: [1, 1]),
            Self.bytes(flags: 2, after: 5, entries: [5]),
            Self.bytes(flags: 2, after: 5, entries: [4, 6]),
            Self.bytes(flags: 4, after: nil, entries: []),
            Self.bytes(flags: 8, after: nil, entries: [1]),
        ] {
            #expect(throws: DecodeError.self) { try PeerMessage.decode(bad) }
        }
    }
}
