/// The time service on the web endpoint's WebSocket: the page sends `{"type":"time","t1":T1}`
/// (`T1`: its `performance.now()`, milliseconds), the endpoint answers at once with
/// `{"event":"time","t1":T1,"t2_ns":…,"t3_ns":…}`: when it received and sent, in host time
/// (`CLOCK_MONOTONIC` ns, the players' clock). The page stamps `t4` on receipt and estimates
/// its offset to host time NTP-style, `((t2 − t1) + (t3 − t4)) / 2`, keeping the exchanges of
/// least delay (the SDK's `HostClock`). Not a player protocol request: the relay answers it
/// itself, the agent never sees it.
public struct TimeExchange: Sendable, Equatable {
    /// The page's send time, `performance.now()` milliseconds, echoed back unchanged.
    public var t1: Double

    /// Range of `t1`: a `performance.now()` is non-negative and, for a page open a year, below 3.2e10 ms.
    public static let t1Range: ClosedRange<Double> = 0...31_536_000_000

    public init(t1: Double) { self.t1 = t1 }

    /// The reply line (JSON), received at `t2` and sent at `t3` (host time, ns).
    public func reply(t2: Int64, t3: Int64) -> String {
        "{\"event\":\"time\",\"t1\":\(t1),\"t2_ns\":\(t2),\"t3_ns\":\(t3)}"
    }
}
