import LockstepCore
import LockstepPeerWire

/// Per-pair sessions: carrying out ``PairSessions``' directives.
extension Agent {
    func execute(_ directives: [PairSessions.Directive]) {
        for directive in directives {
            switch directive {
            case .send(let message, let peer):
                guard let key = keys.pairKeys[peer], let e = node.membership.endpoint(of: peer) else { continue }
                transport?.send(message, to: e, sealingWith: key)
            case .install(let peer, let accept, let seal):
                transport?.opener.acceptSession(accept, from: peer)
                let before = sessionSeal[peer]
                sessionSeal[peer] = seal
                if before != seal { refreshSessionSeal() }
            }
        }
    }

    /// The transport's per-destination session keys, from each peer's current paths.
    func refreshSessionSeal() {
        var map: [Endpoint: GroupKey] = [:]
        for (peer, key) in sessionSeal {
            for path in node.membership.peers[peer]?.paths ?? [] { map[path.endpoint] = key }
        }
        transport?.setSessionSeal(map)
    }
}
