import LockstepCore

/// Who belongs to a group, as this agent knows it: members by their device keys, and the
/// devices removed from it (for good: a removed key is never admitted again).
///
/// Replicated by gossip: a member announces its own key (`member_key`, sealed under the group's
/// key, so only holders of the key are admitted), and removals travel with the new epoch's key
/// (`epoch_key`, sealed pairwise). Merging is a union of members and of removals, and a
/// removal wins: the set is the same on every member that has heard the same messages,
/// whatever their order.
public struct Roster: Sendable, Equatable {
    public struct Member: Sendable, Equatable {
        public var key: MemberKey
        public var name: String
        public var id: PeerID { key.peerID }
    }

    /// How many members and removals are kept at most (a full roster refuses more, counted).
    public static let maxMembers = 256
    public static let maxRemoved = 1024

    public private(set) var members: [PeerID: Member] = [:]
    public private(set) var removed: Set<PeerID> = []

    public init() {}

    /// What admitting a key did.
    public enum Admission: Equatable, Sendable {
        case added, unchanged, renamed
        /// The key was removed from the group: refused.
        case removed
        /// The roster is full: refused.
        case full
    }

    /// Admits `key` (named `name`), unless it was removed.
    public mutating func admit(_ key: MemberKey, name: String) -> Admission {
        let id = key.peerID
        if removed.contains(id) { return .removed }
        let clean = name.truncated(toUTF8: PeerMessage.maxNameBytes)
        if var m = members[id] {
            guard m.name != clean, !clean.isEmpty else { return .unchanged }
            m.name = clean
            members[id] = m
            return .renamed
        }
        guard members.count < Self.maxMembers else { return .full }
        members[id] = Member(key: key, name: clean)
        return .added
    }

    /// Removes `id` for good; false only if the list of removals is full.
    @discardableResult
    public mutating func remove(_ id: PeerID) -> Bool {
        if removed.contains(id) { return true }
        guard removed.count < Self.maxRemoved else { return false }
        removed.insert(id)
        members[id] = nil
        return true
    }

    public func isRemoved(_ id: PeerID) -> Bool { removed.contains(id) }
    public func member(_ id: PeerID) -> Member? { members[id] }
    public func isMember(_ id: PeerID) -> Bool { members[id] != nil }

    /// Members ordered by peer id (the order every view and message uses).
    public var sortedMembers: [Member] { members.values.sorted { $0.id < $1.id } }

    /// The member whose name or fingerprint (or a prefix of its peer id in hex, at least 8
    /// digits) is `text`; nil if none, or several.
    public func find(_ text: String) -> [Member] {
        let t = text.lowercased()
        let exact = members.values.filter { $0.name == text || $0.key.fingerprint == t || $0.id.hex == t }
        if !exact.isEmpty { return exact.sorted { $0.id < $1.id } }
        guard t.count >= 8 else { return [] }
        return members.values.filter { $0.id.hex.hasPrefix(t) || $0.key.fingerprint.hasPrefix(t) }.sorted { $0.id < $1.id }
    }
}

extension Roster: Codable {
    private struct StoredMember: Codable {
        var key: String
        var name: String
    }

    private enum CodingKeys: String, CodingKey { case members, removed }

    /// Reads a saved roster, refusing keys and ids that are not what they must be.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let stored = try c.decodeIfPresent([StoredMember].self, forKey: .members) ?? []
        let removedHex = try c.decodeIfPresent([String].self, forKey: .removed) ?? []
        guard stored.count <= Self.maxMembers, removedHex.count <= Self.maxRemoved else {
            throw DecodingError.dataCorruptedError(forKey: .members, in: c, debugDescription: "at most \(Self.maxMembers) members and \(Self.maxRemoved) removals")
        }
        for hex in removedHex {
            guard let id = PeerID(hex: hex) else {
                throw DecodingError.dataCorruptedError(forKey: .removed, in: c, debugDescription: "a removed device is a peer id of 32 hex digits, not '\(hex.prefix(40))'")
            }
            removed.insert(id)
        }
        for m in stored {
            guard let key = MemberKey(hex: m.key) else {
                throw DecodingError.dataCorruptedError(forKey: .members, in: c, debugDescription: "a member key is 64 hex digits, not '\(m.key.prefix(70))'")
            }
            _ = admit(key, name: m.name)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(sortedMembers.map { StoredMember(key: $0.key.hex, name: $0.name) }, forKey: .members)
        try c.encode(removed.sorted().map(\.hex), forKey: .removed)
    }
}
