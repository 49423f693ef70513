import LockstepCore
import LockstepPeerWire
import LockstepPlayerProtocol
import Logging

/// The group, its members and its keys: the CLI's group requests, and carrying out
/// ``GroupMembers``' directives.
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
            startAfresh()
            request.reply(groupView(reveal: true))
        case "group_join":
            let r = try request.decode(GroupRequest.self)
            guard let code = r.code else { throw ProtocolError(.invalidField, "group_join needs code") }
            let name = r.name ?? keys.group.name
            guard StateDirectory.isValidGroupName(name) else { throw ProtocolError(.invalidField, "name must be 1-32 letters, digits, '-' or '_'") }
            if Pairing.normalize(code) != nil {
                try joinByCode(code, name: r.name, request, now: now)
                return true
            }
            do {
                try switchGroup(to: try JoinCode.parse(code, name: name))
                // Nothing of the old group reaches the new one (review M9). (A pairing join keeps
                // its node: its flow still needs the inviter the node knows.)
                startAfresh()
            } catch let e as JoinCode.ParseError {
                throw ProtocolError(.invalidField, e.description)
            }
            request.reply(groupView(reveal: false))
        case "group_rotate":
            let directives: [GroupMembers.Directive]
            do {
                directives = try keys.onRotate(newKeyBytes: GroupKey.random().bytes, now: now)
            } catch {
                throw ProtocolError(.invalidState, "the key epoch is at its end; create a new group (lockstep group create) and join it from every device")
            }
            guard execute(directives) else { throw ProtocolError(.internal, "cannot save the new key; the group keeps its current key") }
            request.reply(groupView(reveal: false))
        case "group_invite":
            try invite(request, now: now)
        case "group_members":
            request.reply(membersView())
        case "group_reset_identity":
            let fresh: DeviceIdentity
            do {
                fresh = try StateDirectory(path: configuration.stateDirectory).newDeviceIdentity()
            } catch {
                throw ProtocolError(.internal, "cannot write a new device key (\(error)); this device keeps its key")
            }
            logger.notice("new device key: starting again under it", metadata: [
                "device.previous": "\(identity.device.member.fingerprint)", "device.fingerprint": "\(fresh.member.fingerprint)",
            ])
            request.reply(GroupResetIdentityResult(previousFingerprint: identity.device.member.fingerprint, fingerprint: fresh.member.fingerprint, peerID: fresh.peerID.hex))
            // The reply goes out before the socket closes.
            let reset = identityResetContinuation
            loop.schedule(at: MonotonicClock.read() + 200 * Nanos.millisecond) { reset.yield() }
        case "group_remove":
            let r = try request.decode(GroupRemoveRequest.self)
            let found = keys.roster.find(r.device)
            guard let target = found.first else { throw ProtocolError(.invalidField, "no member is named '\(r.device)' (see lockstep group members)") }
            guard found.count == 1 else {
                throw ProtocolError(.invalidField, "'\(r.device)' names \(found.count) members (\(found.map(\.key.fingerprint).joined(separator: ", "))); give a fingerprint")
            }
            let directives: [GroupMembers.Directive]
            do {
                directives = try keys.onRemove(target.id, newKeyBytes: GroupKey.random().bytes, now: now)
            } catch .isThisDevice {
                throw ProtocolError(.invalidField, "this is this device; to leave the group, create or join another (lockstep group create)")
            } catch .epochExhausted {
                throw ProtocolError(.invalidState, "the key epoch is at its end; create a new group (lockstep group create) and join it from every device but the one to remove")
            } catch {
                throw ProtocolError(.invalidState, "cannot remove \(target.name): \(error)")
            }
            guard execute(directives) else { throw ProtocolError(.internal, "cannot save the group; nothing was removed") }
            request.reply(membersView())
        default:
            return false
        }
        return true
    }

    func membersView() -> GroupMembersResult {
        let reachable = Set(node.membership.reachable)
        let members = keys.roster.sortedMembers.map { m in
            GroupMembersResult.Member(peerID: m.id.hex, name: m.name, fingerprint: m.key.fingerprint, thisDevice: m.id == identity.peerID, reachable: reachable.contains(m.id))
        }
        return GroupMembersResult(epoch: keys.group.epoch, members: members, removed: keys.roster.removed.sorted().map(MemberKey.fingerprint(of:)), unacknowledged: keys.unacknowledged)
    }

    func groupView(reveal: Bool) -> GroupShowResult {
        let g = keys.group
        return GroupShowResult(name: g.name, id: g.id, tag: g.tag, epoch: g.epoch, previousEpoch: g.previousEpoch, joinCode: reveal ? JoinCode.make(g) : nil)
    }

    /// Leaves the current group for `group`, at once.
    func switchGroup(to group: GroupIdentity) throws {
        execute(sessions.onReset())
        guard execute(keys.onSwitch(to: group, name: identity.name)) else { throw ProtocolError(.internal, "cannot save the group") }
        publishTXT()
        logger.notice("switched group", metadata: ["group.name": "\(group.name)", "group.tag": "\(group.tag)"])
    }

    /// Carries out the members' and keys' directives; false if the group could not be saved
    /// (then it keeps what it had, and nothing that depended on saving it was done).
    @discardableResult
    func execute(_ directives: [GroupMembers.Directive]) -> Bool {
        for directive in directives {
            switch directive {
            case .install(let group, let then):
                do {
                    let dir = StateDirectory(path: configuration.stateDirectory)
                    try dir.saveGroup(group)
                    try dir.setActiveGroup(group.name)
                } catch {
                    logger.error("cannot save the group; keeping the one it had", metadata: ["error": "\(error)"])
                    keys.onInstallFailed()
                    return false
                }
                if !execute(then) { return false }
            case .save(let group):
                do {
                    try StateDirectory(path: configuration.stateDirectory).saveGroup(group)
                } catch {
                    let retry = keys.configuration.saveRetry
                    logger.error("cannot save the group's members; keeping them in memory, trying again", metadata: ["error": "\(error)", "retry.seconds": "\(retry.seconds)"])
                    keys.onSaveFailed(now: now())
                }
            case .accept(let accepted):
                transport?.opener.accept(accepted)
            case .acceptPairs(let pairs):
                transport?.opener.acceptPairs(pairs)
                transport?.setMembers(pairs.keys, removed: keys.roster.removed)
                node.onRoster(Set(keys.roster.members.keys))
            case .sealWith(let key):
                transport?.sealer.use(key)
                logger.info("sealing under the group key", metadata: ["group.epoch": "\(key.epoch)", "members.unacknowledged": "\(keys.unacknowledged)"])
            case .send(let message, let peer, let pairwise):
                guard let e = node.membership.endpoint(of: peer) else { continue }
                guard mayTransmit(message, to: e, now: now()) else {
                    keys.onHeldBack(message, to: peer)
                    continue
                }
                if pairwise {
                    guard let key = keys.pairKeys[peer] else { continue }
                    transport?.send(message, to: e, sealingWith: key)
                } else {
                    transport?.send(message, to: e)
                }
            case .sendPairwise(let message, let endpoint, let peer):
                if let key = keys.pairKeys[peer] { transport?.send(message, to: endpoint, sealingWith: key) }
            case .refused(let refusal, let peer):
                transport?.drop(refusal.rawValue, "refused a message", from: node.membership.endpoint(of: peer))
            case .notice(let notice):
                log(notice)
                if case .removed(let id, _) = notice { execute(sessions.onGone(id)) }
            }
        }
        return true
    }

    private func log(_ notice: GroupMembers.Notice) {
        func name(_ id: PeerID?) -> String {
            guard let id else { return "?" }
            return keys.roster.member(id)?.name ?? node.membership.peers[id]?.name ?? id.short
        }
        switch notice {
        case .admitted(let id, let n):
            logger.notice("admitted a member", metadata: ["member.name": "\(n)", "member.fingerprint": "\(MemberKey.fingerprint(of: id))"])
        case .removed(let id, let by):
            logger.notice("a device was removed from the group", metadata: ["member.fingerprint": "\(MemberKey.fingerprint(of: id))", "removed.by": "\(name(by))"])
        case .newEpoch(let epoch, let by):
            logger.notice("new group key", metadata: ["group.epoch": "\(epoch)", "key.from": "\(name(by))"])
        case .previousKeyForgotten(let epoch):
            logger.info("forgot the previous group key", metadata: ["group.epoch": "\(epoch)"])
        }
    }

    func txtRecord() -> [String: String] {
        tagDay = GroupKey.tagDayNow()
        return [
            LockstepTXT.version: String(PeerProtocol.version), LockstepTXT.peerID: identity.peerID.hex,
            LockstepTXT.group: keys.group.tag(day: tagDay), LockstepTXT.name: identity.name.truncated(toUTF8: 63),
        ].merging(pairing.invite == nil ? [:] : [LockstepTXT.invite: "1"]) { a, _ in a }
    }

    /// Publishes this agent's TXT record with today's group tag, and has discovery take the
    /// group's tags of the days either side for ours (the tag is new every day: review L3).
    func publishTXT() {
        try? discovery?.updateTXT(txtRecord())
        discovery?.recognise(groupTags: keys.group.recognisedTags(day: tagDay))
    }

}
