import Synchronization

/// One remembered value of a pure function of time: the value at the instant last asked for.
/// ``MeshClock`` keeps its asymmetry scale in one, and replaces the box whenever its inputs
/// change, so a value read here is always the function's at that instant for the inputs the box
/// was made with.
final class ScaleMemo: Sendable {
    private let last = Mutex<(at: LocalTime, value: Double?)?>(nil)

    /// The value at `now`: remembered if `now` was the last instant asked for, else computed and
    /// remembered.
    func value(at now: LocalTime, compute: () -> Double?) -> Double? {
        if let hit = last.withLock({ $0 }), hit.at == now { return hit.value }
        let value = compute()
        last.withLock { $0 = (now, value) }
        return value
    }
}
