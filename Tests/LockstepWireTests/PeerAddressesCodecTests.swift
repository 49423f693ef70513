import LockstepCore
import LockstepPeerWire
import Testing

/// `peer_addresses` (peer protocol §4.4a): a canonical list of addresses another device can use,
/// and nothing else decodes.
@Suite("Peer addresses codec")
struct PeerAddressesCodecTests {
    static func peer(_ i: UInt64) -> PeerID { PeerID(high: 0, low: i) }

    /// One entry's bytes written by hand: peer, family, address, port.
    static func entry(_ i: UInt64, family: UInt8 = 4, address: [UInt8] = [10, 77, 0, 2], port: UInt16 = 7362) -> [UInt8] {
        peer(i).bytes + [family] + address + [UInt8(port >> 8), UInt8(port & 0xff)]
    }

    static func message(_ entries: [[UInt8]]) -> [UInt8] {
        [0x07, UInt8(entries.count)] + entries.joined()
    }

    static let v6 = [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [2]

    @Test("IPv4 and IPv6 entries round-trip; the largest message fits one envelope")
    func roundTrip() throws {
        let m = PeerMessage.peerAddresses([
            PeerAddress(peer: Self.peer(1), endpoint: .v4(a: 192, b: 168, c: 1, d: 20, port: 7362)),
            PeerAddress(peer: Self.peer(2), endpoint: .v6(bytes: Self.v6, port: 1, scope: 0)),
        ])
        #expect(try PeerMessage.decode(m.encoded()) == m)
        // IPv4 link-local works across the link without a scope (a network without DHCP).
        let autoconf = PeerMessage.peerAddresses([PeerAddress(peer: Self.peer(1), endpoint: .v4(a: 169, b: 254, c: 7, d: 9, port: 7362))])
        #expect(try PeerMessage.decode(autoconf.encoded()) == autoconf)
        #expect(try PeerMessage.decode(Self.message([Self.entry(1), Self.entry(2, family: 6, address: Self.v6)])) == .peerAddresses([
            PeerAddress(peer: Self.peer(1), endpoint: .v4(a: 10, b: 77, c: 0, d: 2, port: 7362)),
            PeerAddress(peer: Self.peer(2), endpoint: .v6(bytes: Self.v6, port: 7362, scope: 0)),
        ]))
        let full = PeerMessage.peerAddresses((1...UInt64(PeerMessage.maxPeerAddresses)).map { PeerAddress(peer: Self.peer($0), endpoint: .v6(bytes: Self.v6, port: .max, scope: 0)) })
        #expect(try PeerMessage.decode(full.encoded()) == full)
        #expect(full.encoded().count <= Envelope.maxMessageBytes)
    }

    @Test("more than 24 entries, entries out of order or repeated, an unknown family, port 0, and unusable addresses are malformed")
    func refused() {
        let bad: [(String, [UInt8])] = [
            ("25 entries", Self.message((1...25).map { Self.entry(UInt64($0)) })),
            ("out of order", Self.message([Self.entry(2), Self.entry(1)])),
            ("repeated", Self.message([Self.entry(1), Self.entry(1)])),
            ("family 5", Self.message([Self.entry(1, family: 5)])),
            ("port 0", Self.message([Self.entry(1, port: 0)])),
            ("0.0.0.0", Self.message([Self.entry(1, address: [0, 0, 0, 0])])),
            ("IPv4 multicast", Self.message([Self.entry(1, address: [224, 0, 0, 251])])),
            ("broadcast", Self.message([Self.entry(1, address: [255, 255, 255, 255])])),
            ("::", Self.message([Self.entry(1, family: 6, address: [UInt8](repeating: 0, count: 16))])),
            ("IPv6 multicast", Self.message([Self.entry(1, family: 6, address: [0xff, 0x02] + [UInt8](repeating: 0, count: 13) + [0xfb])])),
            ("IPv6 link-local", Self.message([Self.entry(1, family: 6, address: [0xfe, 0x80] + [UInt8](repeating: 0, count: 13) + [1])])),
            ("truncated address", Array(Self.message([Self.entry(1, family: 6, address: Self.v6)]).dropLast(3))),
            ("trailing byte", Self.message([Self.entry(1)]) + [0]),
        ]
        for (name, bytes) in bad {
            #expect(throws: DecodeError.self, "\(name)") { try PeerMessage.decode(bytes) }
        }
    }

    @Test("the encoder keeps only the first 24 entries, so what it sends always decodes")
    func encoderCaps() throws {
        let many = PeerMessage.peerAddresses((1...30).map { PeerAddress(peer: Self.peer(UInt64($0)), endpoint: .v4(a: 10, b: 0, c: 0, d: UInt8($0), port: 9)) })
        guard case .peerAddresses(let kept) = try PeerMessage.decode(many.encoded()) else {
            Issue.record("not a peer_addresses")
            return
        }
        #expect(kept.count == PeerMessage.maxPeerAddresses)
    }
}
