import LockstepCore
import LockstepPlayerProtocol

extension Agent {
    /// Clients subscribed or went away: measurements flow only while someone watches them, and
    /// the peers' sync reports only while someone watches `sync`.
    func topicsChanged(now: LocalTime) {
        let topics = clients.values.reduce(into: Set<Topic>()) { $0.formUnion($1.topics) }
        execute(node.onSyncReportsWanted(topics.contains(.sync), now: now), now: now)
        measurements.onSubscribers(topics.contains(.clock) || topics.contains(.sync), now: now)
        rearm(now)
    }

    /// Pushes `clock_changed` and `sync_changed` to their subscribers.
    func pushMeasurements(now: LocalTime) {
        measurements.onPushed(now: now)
        if clients.values.contains(where: { $0.topics.contains(.clock) }) {
            broadcast(ClockChangedEvent(clock: clock(now: now)), topic: .clock)
        }
        guard clients.values.contains(where: { $0.topics.contains(.sync) }) else { return }
        let players = playersView(now: now).players
        let hasErrors = players.contains { $0.syncErrorNs != nil }
        // Nothing measured and nothing to clear: an idle group costs its watchers nothing.
        guard hasErrors || measurements.syncHadErrors else { return }
        measurements.syncHadErrors = hasErrors
        broadcast(PlayersChangedEvent.syncChanged(hostTimeNs: hostTime(now), players: players), topic: .sync)
    }
}
