import LockstepCore
import LockstepPeerWire
import LockstepPlayerProtocol
import Logging

/// Pairing a new device with a short code: `group_invite` on a member, `group_join CODE` on the
/// new device, and carrying out ``Pairing``'s directives.
extension Agent {
    /// At most this many inviting devices are remembered from DNS-SD.
    static let maxInviters = 16

    func onPairing(_ message: PairingMessage, from source: Endpoint) {
        let now = now()
        execute(pairing.onMessage(message, from: source, group: keys.group, now: now))
        rearm(now)
    }

    /// `group_invite`: a one-time code for `uses` devices, valid 10 minutes.
    func invite(_ request: Request, now: LocalTime) throws {
        let r = try request.decode(GroupInviteRequest.self)
        let code = Pairing.newCode()
        execute(pairing.onInvite(code: code, uses: r.uses ?? 1, now: now))
        guard let invite = pairing.invite else { throw ProtocolError(.internal, "the invite did not open") }
        logger.notice("invite open", metadata: ["invite.uses": "\(invite.usesLeft)"])
        request.reply(GroupInviteResult(code: Pairing.display(code), expiresInNs: (invite.expires - now).ns, uses: invite.usesLeft))
    }

    /// `group_join` with a pairing code: answered when pairing ends (joined or failed).
    func joinByCode(_ code: String, name: String?, _ request: Request, now: LocalTime) throws {
        guard pendingJoin == nil else { throw ProtocolError(.invalidState, "already joining; wait for it to end") }
        var g = SystemRandomNumberGenerator()
        let directives = pairing.onJoin(code: code, groupName: name, me: identity.device.member, name: identity.name, session: g.next(), now: now)
        pendingJoin = request
        // Devices of the group being joined were parked as another group's: look again.
        discovery?.seekInviters(true)
        execute(directives)
        execute(pairing.onCandidates(pairingCandidates(), now: now))
    }

    /// Where a joining agent tries its code: devices advertising an open invite, and configured peers.
    func pairingCandidates() -> [Endpoint] {
        var out = inviters.keys.sorted().flatMap { inviters[$0] ?? [] }
        out += staticEndpoints
        var seen = Set<Endpoint>()
        return out.filter { seen.insert($0).inserted }
    }

    /// Notes a DNS-SD service with an open invite (or one that closed it).
    func noteInviter(_ service: DiscoveredService) {
        let open = service.txt[LockstepTXT.invite] == "1"
        if open, inviters[service.instanceName] == nil, inviters.count >= Self.maxInviters { return }
        inviters[service.instanceName] = open ? Array(service.endpoints.prefix(4)) : nil
    }

    func execute(_ directives: [Pairing.Directive]) {
        for directive in directives {
            switch directive {
            case .send(let message, let endpoint):
                transport?.send(message, to: endpoint)
            case .admit(let key, let name):
                logger.notice("paired a new device", metadata: ["member.name": "\(name)", "member.fingerprint": "\(key.fingerprint)"])
                execute(keys.onMemberKey(key.bytes, name: name, from: key.peerID, epochByte: nil, now: now()))
            case .joined(let group):
                let request = pendingJoin
                pendingJoin = nil
                discovery?.seekInviters(false)
                do {
                    try switchGroup(to: group)
                    request?.reply(groupView(reveal: false))
                } catch {
                    request?.reply(error: ProtocolError(.internal, "paired, but cannot save the group: \(error)"))
                }
            case .joinFailed(let reason):
                logger.notice("pairing failed", metadata: ["reason": "\(reason)"])
                pendingJoin?.reply(error: ProtocolError(.invalidState, reason))
                pendingJoin = nil
                discovery?.seekInviters(false)
            case .inviteOpen:
                publishTXT()
            case .refused(let counter, let source):
                transport?.drop(counter, "refused a pairing datagram", from: source)
            }
        }
    }
}
