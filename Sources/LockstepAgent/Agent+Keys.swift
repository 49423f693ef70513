import LockstepCore
import LockstepPeerWire
import LockstepPlayerProtocol
import Logging

/// The group and its key: the CLI's group requests, and carrying out ``KeyRotation``'s directives.
extension Agent {
    func dispatchGroup(_ type: String, _ request: Request, now: LocalTime) throws -> Bool {
        switch type {
        case "group_show":
            let r = try request.decode(GroupRequest.self)
            request.reply(groupView(reveal: r.reveal == true))
        case "group_create":
            let r = try request.decode(GroupRequest.self)
            let name = r.name ?? "default"
            guard StateDirectory.isValidGroupName(name) else { throw ProtocolError(.invalidField, "name must be 1-32 letters, digits, '-' or '_'") }
            try switchGroup(to: GroupIdentity(name: name, key: .random()))
            request.reply(groupView(reveal: true))
        case "group_join":
            let r = try request.decode(GroupRequest.self)
            guard let code = r.code else { throw ProtocolError(.invalidField, "group_join needs code") }
            let name = r.name ?? keys.group.name
            guard StateDirectory.isValidGroupName(name) else { throw ProtocolError(.invalidField, "name must be 1-32 letters, digits, '-' or '_'") }
            do {
                try switchGroup(to: try JoinCode.parse(code, name: name))
            } catch let e as JoinCode.ParseError {
                throw ProtocolError(.invalidField, e.description)
            }
            request.reply(groupView(reveal: false))
        case "group_rotate":
            let directives: [KeyRotation.Directive]
            do {
                directives = try keys.onRotate(newKeyBytes: GroupKey.random().bytes, reachable: node.membership.reachable, now: now)
            } catch {
                throw ProtocolError(.invalidState, "the key epoch is at its end; create a new group (lockstep group create) and join it from every device")
            }
            guard execute(directives) else { throw ProtocolError(.internal, "cannot save the new key; the group keeps its current key") }
            logger.notice("rotating the group key", metadata: ["group.epoch": "\(keys.group.epoch)", "peers.awaiting": "\(keys.unacknowledged)"])
            request.reply(groupView(reveal: false))
        default:
            return false
        }
        return true
    }

    func groupView(reveal: Bool) -> GroupShowResult {
        let g = keys.group
        return GroupShowResult(name: g.name, id: g.id, tag: g.tag, epoch: g.epoch, previousEpoch: g.previousEpoch, joinCode: reveal ? JoinCode.make(g) : nil)
    }

    /// Leaves the current group for `group`, at once.
    private func switchGroup(to group: GroupIdentity) throws {
        guard execute(keys.onSwitch(to: group)) else { throw ProtocolError(.internal, "cannot save the group") }
        try? discovery?.updateTXT(txtRecord())
        logger.notice("switched group", metadata: ["group.name": "\(group.name)", "group.tag": "\(group.tag)"])
    }

    /// Carries out the key rotation's directives; false if a key could not be saved (then the
    /// rotation keeps the key it had, and nothing that depended on saving it was done).
    @discardableResult
    func execute(_ directives: [KeyRotation.Directive]) -> Bool {
        for directive in directives {
            switch directive {
            case .install(let group, let then):
                do {
                    let dir = StateDirectory(path: configuration.stateDirectory)
                    try dir.saveGroup(group)
                    try dir.setActiveGroup(group.name)
                } catch {
                    logger.error("cannot save the group key; keeping the current one", metadata: ["error": "\(error)"])
                    keys.onInstallFailed()
                    return false
                }
                logger.info("installed a group key", metadata: ["group.name": "\(group.name)", "group.epoch": "\(group.epoch)"])
                if !execute(then) { return false }
            case .accept(let accepted):
                transport?.opener.accept(accepted)
            case .sealWith(let key):
                transport?.sealer.use(key)
                logger.info("sealing under the group key", metadata: ["group.epoch": "\(key.epoch)", "peers.unacknowledged": "\(keys.unacknowledged)"])
            case .send(let message, let peer):
                if let e = node.membership.endpoint(of: peer) { transport?.send(message, to: e) }
            case .reply(let message, let endpoint, let key):
                transport?.send(message, to: endpoint, sealingWith: key)
            case .refused(let refusal, let peer):
                transport?.drop(refusal.rawValue, "refused a key update", from: node.membership.endpoint(of: peer))
            }
        }
        return true
    }

    func txtRecord() -> [String: String] {
        [
            LockstepTXT.version: String(PeerProtocol.version), LockstepTXT.peerID: identity.peerID.hex,
            LockstepTXT.group: keys.group.tag, LockstepTXT.name: identity.name.truncated(toUTF8: 63),
        ]
    }
}
