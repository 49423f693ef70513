#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// A source of host time: the machine's `CLOCK_MONOTONIC` in nanoseconds, the time players and
/// the agent speak on the player socket.
///
/// Every shell (agent, transport, discovery, mpv bridge, reference player) is given one clock and
/// reads it once per event; production passes ``MonotonicClock``, tests a ``ManualClock`` that
/// moves only when told, so that logic is tested without sleeping.
public protocol HostClock: Sendable {
    /// Nanoseconds on this clock's monotonic scale. Never steps backwards.
    func now() -> Int64
}

/// The machine's `CLOCK_MONOTONIC`, in nanoseconds: the "host time" of the player protocol.
///
/// All network namespaces on one machine share this clock, which is what lets the lab compare
/// start instants across hosts directly.
public struct MonotonicClock: HostClock {
    public init() {}

    @inline(__always)
    public func now() -> Int64 {
        MonotonicClock.read()
    }

    /// Reads `CLOCK_MONOTONIC` without an instance, for hot paths.
    @inline(__always)
    public static func read() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) &* 1_000_000_000 &+ Int64(ts.tv_nsec)
    }
}

/// A clock that only moves when a test tells it to.
public final class ManualClock: HostClock {
    private let value: Mutex<Int64>

    public init(_ start: Int64 = 1_000_000_000) {
        self.value = Mutex(start)
    }

    public func now() -> Int64 {
        value.withLock { $0 }
    }

    /// Moves the clock forward by `nanoseconds` (negative values are refused: it is monotonic).
    public func advance(by nanoseconds: Int64) {
        precondition(nanoseconds >= 0, "a monotonic clock does not go backwards")
        value.withLock { $0 += nanoseconds }
    }

    /// Sets the clock to `time`, which must not be earlier than now.
    public func set(_ time: Int64) {
        value.withLock {
            precondition(time >= $0, "a monotonic clock does not go backwards")
            $0 = time
        }
    }
}
