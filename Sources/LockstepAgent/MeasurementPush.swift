import LockstepCore

/// When the agent pushes measurements (topics `clock` and `sync`) to its subscribers: about once
/// a second while anyone subscribes, never otherwise; a new subscriber gets the first at once.
struct MeasurementPush: Sendable, Equatable {
    static let interval: TimeSpan = .seconds(1)

    /// The next push, or nil while nobody subscribes.
    private(set) var nextDue: LocalTime?
    /// The last `sync_changed` carried some error: one more (without) clears the subscribers' view.
    var syncHadErrors = false

    /// Whether anyone subscribes now; a first subscriber is served at once.
    mutating func onSubscribers(_ any: Bool, now: LocalTime) {
        if !any {
            nextDue = nil
            syncHadErrors = false
        } else if nextDue == nil {
            nextDue = now
        }
    }

    func isDue(_ now: LocalTime) -> Bool {
        nextDue.map { now >= $0 } ?? false
    }

    /// A push went out at `now`.
    mutating func onPushed(now: LocalTime) {
        nextDue = now + Self.interval
    }
}
