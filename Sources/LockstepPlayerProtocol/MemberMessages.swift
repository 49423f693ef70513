/// `group_members`: the group's members and removed devices, as this agent knows them.
public struct GroupMembersResult: Codable, Sendable, Equatable {
    public struct Member: Codable, Sendable, Equatable {
        public var peerID: String
        public var name: String
        /// What a person compares between two screens: 80 bits of the device key's digest.
        public var fingerprint: String
        public var thisDevice: Bool
        /// Whether this agent reaches it now.
        public var reachable: Bool

        public init(peerID: String, name: String, fingerprint: String, thisDevice: Bool, reachable: Bool) {
            self.peerID = peerID
            self.name = name
            self.fingerprint = fingerprint
            self.thisDevice = thisDevice
            self.reachable = reachable
        }

        enum CodingKeys: String, CodingKey {
            case name, fingerprint, reachable
            case peerID = "peer_id"
            case thisDevice = "this_device"
        }
    }

    public var epoch: UInt32
    public var members: [Member]
    /// Fingerprints of the devices removed from the group.
    public var removed: [String]
    /// Members that have not acknowledged this agent's newest key.
    public var unacknowledged: Int

    public init(epoch: UInt32, members: [Member], removed: [String], unacknowledged: Int) {
        self.epoch = epoch
        self.members = members
        self.removed = removed
        self.unacknowledged = unacknowledged
    }
}

/// `group_remove`: remove a device (by name, fingerprint or peer id) from the group. The group
/// moves to a new epoch whose key reaches every other member and not that device.
/// The result of `group_reset_identity`: this device's key was replaced by a new one (a copied
/// state directory's way out); the agent starts again under it right after replying.
public struct GroupResetIdentityResult: Codable, Sendable, Equatable {
    /// The key it had, which stays a member (the other copy holds it).
    public var previousFingerprint: String
    public var fingerprint: String
    public var peerID: String

    public init(previousFingerprint: String, fingerprint: String, peerID: String) {
        self.previousFingerprint = previousFingerprint
        self.fingerprint = fingerprint
        self.peerID = peerID
    }
}

public struct GroupRemoveRequest: Codable, Sendable, Equatable, PlayerRequest {
    public var device: String

    public init(device: String) {
        self.device = device
    }

    public func validate() throws(ProtocolError) {
        guard !device.isEmpty, device.utf8.count <= 64 else { throw ProtocolError(.invalidField, "device must be a name, fingerprint or peer id (1-64 bytes)") }
    }
}

/// `group_invite`: open a one-time pairing code on this agent for `uses` devices (1 by default,
/// at most 64), valid 10 minutes. A new invite replaces an open one.
public struct GroupInviteRequest: Codable, Sendable, Equatable, PlayerRequest {
    public var uses: Int?

    public init(uses: Int? = nil) {
        self.uses = uses
    }

    public func validate() throws(ProtocolError) {
        if let uses, !(1...64).contains(uses) { throw ProtocolError(.invalidField, "uses must be within 1...64") }
    }
}

/// The result of `group_invite`.
public struct GroupInviteResult: Codable, Sendable, Equatable {
    /// 8 digits, shown as `1234-5678`: `lockstep group join 1234-5678` on the new device.
    public var code: String
    public var expiresInNs: Int64
    public var uses: Int

    public init(code: String, expiresInNs: Int64, uses: Int) {
        self.code = code
        self.expiresInNs = expiresInNs
        self.uses = uses
    }

    enum CodingKeys: String, CodingKey {
        case code, uses
        case expiresInNs = "expires_in_ns"
    }
}
