import LockstepCore
import LockstepPlayerProtocol
import LockstepPeerWire
import Logging

/// Group membership by shared key: showing, creating, joining and rotating the group key.
///
/// Rotation without restarting the group: the new key (same group id, epoch + 1) goes to every
/// reachable peer in a `key_update` sealed under the current key, retransmitted until
/// acknowledged. Every agent then accepts both keys, and keeps *sending* under the old one for
/// a grace period (so that no peer that has not received the new key yet is cut off), then
/// switches. A peer that was away and still speaks the previous epoch is sent the new key when
/// it is next heard from.
extension Agent {
    /// Sending under the new key starts this long after it is installed.
    static let keyGraceNs: Int64 = 3 * Nanos.second

    func dispatchGroup(_ type: String, _ line: [UInt8], reply: (any Encodable & Sendable) -> Void) throws -> Bool {
        switch type {
        case "group_show":
            let r = try PlayerJSON.decode(GroupRequest.self, from: line)
            reply(groupView(reveal: r.reveal == true))
        case "group_create":
            let r = try PlayerJSON.decode(GroupRequest.self, from: line)
            let name = r.name ?? "default"
            guard StateDirectory.isValidGroupName(name) else { throw ProtocolError(.invalidField, "name must be 1-32 letters, digits, '-' or '_'") }
            try switchGroup(to: GroupIdentity(name: name, key: .random()))
            reply(groupView(reveal: true))
        case "group_join":
            let r = try PlayerJSON.decode(GroupRequest.self, from: line)
            guard let code = r.code else { throw ProtocolError(.invalidField, "group_join needs code") }
            let name = r.name ?? identity.group.name
            guard StateDirectory.isValidGroupName(name) else { throw ProtocolError(.invalidField, "name must be 1-32 letters, digits, '-' or '_'") }
            do {
                try switchGroup(to: try JoinCode.parse(code, name: name))
            } catch let e as JoinCode.ParseError {
                throw ProtocolError(.invalidField, e.description)
            }
            reply(groupView(reveal: false))
        case "group_rotate":
            try rotateKey()
            reply(groupView(reveal: false))
        default:
            return false
        }
        return true
    }

    func groupView(reveal: Bool) -> GroupShowResult {
        let g = identity.group
        return GroupShowResult(name: g.name, id: g.id, tag: g.tag, epoch: g.epoch, previousEpoch: g.previousEpoch, joinCode: reveal ? JoinCode.make(g) : nil)
    }

    private func save(_ group: GroupIdentity) throws {
        let dir = StateDirectory(path: configuration.stateDirectory)
        do {
            try dir.saveGroup(group)
            try dir.setActiveGroup(group.name)
        } catch {
            throw ProtocolError(.internal, "cannot save the group: \(error)")
        }
    }

    /// Leaves the current group for `group`, at once.
    private func switchGroup(to group: GroupIdentity) throws {
        try save(group)
        identity.group = group
        transport?.opener.accept([group.currentKey])
        transport?.sealer.use(group.currentKey)
        keyRotation = nil
        try? discovery?.updateTXT(txtRecord())
        logger.notice("switched group", metadata: ["group.name": "\(group.name)", "group.tag": "\(group.tag)"])
    }

    /// A new key for the same group, spread to the peers.
    private func rotateKey() throws {
        var group = identity.group
        let next = GroupKey.random(epoch: group.epoch &+ 1)
        group.rotate(to: next)
        try install(group, from: nil)
        let update = PeerMessage.keyUpdate(epoch: next.epoch, key: next.bytes)
        var awaiting: Set<PeerID> = []
        for peer in node.membership.reachable {
            awaiting.insert(peer)
            if let e = node.membership.endpoint(of: peer) { transport?.send(update, to: e) }
        }
        keyRotation?.awaiting = awaiting
        logger.notice("rotating the group key", metadata: ["group.epoch": "\(next.epoch)", "peers.awaiting": "\(awaiting.count)"])
    }

    /// Accepts both keys now; sends under the new one after the grace period.
    private func install(_ group: GroupIdentity, from peer: PeerID?) throws {
        try save(group)
        identity.group = group
        transport?.opener.accept([group.currentKey] + (group.previous.map { [$0] } ?? []))
        keyRotation = KeyRotation(epoch: group.epoch, switchAt: now() + Self.keyGraceNs, awaiting: [], retries: 0)
        scheduleKeyTimer(after: 200 * Nanos.millisecond)
        logger.info("installed a new group key", metadata: ["group.epoch": "\(group.epoch)", "key.from": "\(peer.map(\.short) ?? "here")"])
    }

    /// Handles key messages; returns true if `message` was one.
    func onKeyMessage(_ message: PeerMessage, from sender: PeerID, source: Endpoint, epochByte: UInt8) -> Bool {
        switch message {
        case .keyUpdate(let epoch, let key):
            if epoch > identity.group.epoch, let next = GroupKey(bytes: key, epoch: epoch) {
                var group = identity.group
                group.rotate(to: next)
                try? install(group, from: sender)
            }
            if epoch >= identity.group.epoch { transport?.send(.keyAck(epoch: epoch), to: source) }
            return true
        case .keyAck(let epoch):
            if epoch == keyRotation?.epoch { keyRotation?.awaiting.remove(sender) }
            return true
        default:
            // A peer still sealing with the previous key may have missed the rotation: tell it.
            if epochByte != UInt8(truncatingIfNeeded: identity.group.epoch), keyRotation == nil || keyRotation?.switchAt ?? 0 < now() {
                if keyHints[sender].map({ now() - $0 > Nanos.second }) ?? true {
                    keyHints[sender] = now()
                    // Sealed under the key it still speaks, or it could not read it.
                    let theirs = identity.group.previous.flatMap { UInt8(truncatingIfNeeded: $0.epoch) == epochByte ? $0 : nil }
                    transport?.send(.keyUpdate(epoch: identity.group.epoch, key: identity.group.key), to: source, sealingWith: theirs)
                }
            }
            return false
        }
    }

    private func scheduleKeyTimer(after delay: Int64) {
        _ = loop.scheduleTask(in: .nanoseconds(delay)) { [self] in
            self.assumeIsolated { $0.onKeyTimer() }
        }
    }

    private func onKeyTimer() {
        guard var r = keyRotation, r.epoch == identity.group.epoch else { return }
        let now = now()
        if !r.awaiting.isEmpty && r.retries < 10 {
            r.retries += 1
            for peer in r.awaiting where node.membership.isReachable(peer) {
                if let e = node.membership.endpoint(of: peer) { transport?.send(.keyUpdate(epoch: identity.group.epoch, key: identity.group.key), to: e) }
            }
        }
        if now >= r.switchAt {
            transport?.sealer.use(identity.group.currentKey)
            logger.info("sending under the new group key", metadata: ["group.epoch": "\(r.epoch)", "peers.unacknowledged": "\(r.awaiting.count)"])
            keyRotation = nil
            return
        }
        keyRotation = r
        scheduleKeyTimer(after: 200 * Nanos.millisecond)
    }

    func txtRecord() -> [String: String] {
        [
            LockstepTXT.version: String(PeerProtocol.version), LockstepTXT.peerID: identity.peerID.hex,
            LockstepTXT.group: identity.group.tag, LockstepTXT.name: identity.name.truncated(toUTF8: 63),
        ]
    }
}

/// A rotation in progress on this agent.
struct KeyRotation {
    var epoch: UInt32
    /// When to start sealing with the new key.
    var switchAt: Int64
    /// Peers that have not acknowledged the new key (only on the agent that rotated).
    var awaiting: Set<PeerID>
    var retries: Int
}
