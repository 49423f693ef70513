import LockstepCore

/// Switching groups (review finding M9): nothing of the old group may reach the new one. Its
/// replicated state (items, their URLs and titles, who issued what), its participants, clock
/// mesh and membership all go with a fresh ``Node``; the connected players stay connected and
/// are introduced to it again, and configured peers are contacted again.
extension Agent {
    func startAfresh() {
        let now = now()
        node = Self.makeNode(configuration: configuration, identity: identity)
        node.onRoster(Set(keys.roster.members.keys))
        replyBudget = ReplyBudget()
        for text in configuration.staticPeers { addStaticPeer(text, now: now) }
        for state in clients.values.sorted(by: { $0.connection.id < $1.connection.id }) {
            guard let id = state.playerID, let hello = state.hello else { continue }
            execute(node.onPlayerHello(id: id, info: playerInfo(hello, id: id), now: now), now: now)
        }
        topicsChanged(now: now)
        settleDiscovery(now: now)  // the old group's peers are no longer reachable
        step(now)
    }
}
