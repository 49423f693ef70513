import LockstepCore
import Synchronization

/// The agent's device clock, shared by the agent and its transport, changeable at run time by
/// the `sim_clock` test hook (to make a peer's clock jump or drift mid-run). In production it is
/// the identity: the device clock is `CLOCK_MONOTONIC`.
public final class DeviceClockSource: Sendable {
    private let value: Mutex<DeviceClock>

    public init(_ clock: DeviceClock) {
        value = Mutex(clock)
    }

    public var current: DeviceClock { value.withLock { $0 } }

    /// From this instant the device clock is `jumpNs` ahead of where it was, and runs at `skewPPM`
    /// (unchanged if nil):
    ///
    ///     new(h) = old(h₀) + jump + (h − h₀)(1 + skew·10⁻⁶)
    public func change(jumpNs: Int64, skewPPM: Double?, atHost h0: Int64) {
        value.withLock { c in
            let d0 = c.device(fromHost: h0)
            c = DeviceClock(offsetNs: d0.ns.subtractingSaturating(h0).addingSaturating(jumpNs), skewPPM: skewPPM ?? c.skewPPM, epochNs: h0)
        }
    }
}
