/// Where the sender reaches one of its peers: an entry of a `peer_addresses` message (peer
/// protocol §4.15), which introduces the group to a device that has just become reachable, so
/// that it can reach the others before DNS-SD has resolved them (on a busy network, with dozens
/// of avahi-daemons answering each other's queries, that takes tens of seconds).
///
/// Only addresses another device can use are passed on: IPv4 (link-local `169.254/16` too: a
/// network without DHCP), or IPv6 other than link-local (an IPv6 link-local address is only
/// meaningful with the sender's own interface index); never an unspecified, multicast or
/// broadcast address, nor port 0.
public struct PeerAddress: Sendable, Equatable {
    public var peer: PeerID
    public var endpoint: Endpoint

    public init(peer: PeerID, endpoint: Endpoint) {
        self.peer = peer
        self.endpoint = endpoint
    }

    /// Whether `endpoint` may be passed on to another device (see the type's documentation).
    public static func isPassable(_ endpoint: Endpoint) -> Bool {
        guard endpoint.port != 0 else { return false }
        switch endpoint {
        case .v4(let a, _, _, _, _):
            // 0.0.0.0/8 (this network), 224.0.0.0/4 (multicast) and above (reserved, broadcast).
            return a != 0 && a < 224
        case .v6(let bytes, _, let scope):
            // ::, ff00::/8 (multicast), fe80::/10 (link-local, whose scope is the sender's).
            return scope == 0 && bytes.count == 16 && bytes[0] != 0xff && !endpoint.isLinkLocal && bytes.contains { $0 != 0 }
        }
    }
}

extension PeerAddress: Codable {
    enum CodingKeys: String, CodingKey {
        case peer, endpoint
    }

    /// `{"peer": "<32 hex digits>", "endpoint": "10.77.0.2:7362"}` (IPv6 as `[2001:db8::2]:7362`).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        peer = try c.decode(PeerID.self, forKey: .peer)
        let text = try c.decode(String.self, forKey: .endpoint)
        guard let endpoint = Endpoint(text) else {
            throw DecodingError.dataCorruptedError(forKey: .endpoint, in: c, debugDescription: "not a numeric HOST:PORT: \(text)")
        }
        self.endpoint = endpoint
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(peer, forKey: .peer)
        try c.encode(endpoint.description, forKey: .endpoint)
    }
}
