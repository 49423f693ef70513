import Synchronization

/// What the web endpoint counts: refusals by reason, frames refused, sessions, pairing outcomes.
/// Shown at `GET /counters` (loopback only) and logged.
public final class WebCounters: Sendable {
    private let values = Mutex<[String: Int]>([:])

    public init() {}

    /// Adds one to `name`; returns the new count.
    @discardableResult
    public func add(_ name: String) -> Int {
        values.withLock { v in
            v[name, default: 0] += 1
            return v[name]!
        }
    }

    /// Every counter, by name.
    public var snapshot: [String: Int] { values.withLock { $0 } }
}
