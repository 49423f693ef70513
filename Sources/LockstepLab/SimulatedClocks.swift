import LockstepPlayerProtocol

/// The truth behind lab agents' simulated device clocks (`lockstepd --sim-clock-offset`,
/// `--sim-clock-skew`): every host shares one kernel clock, so each device clock is a known line
/// over `CLOCK_MONOTONIC`, and the true offset between two agents follows from their readings.
public enum SimulatedClocks {
    /// The true offset (peer's device clock − observer's) at the instant of `observer`'s `clock`
    /// reading: `peer`'s own reading extrapolated with its configured skew, exact to the ns.
    public static func trueOffset(observer: ClockResult, peer: ClockResult, peerSkewPPM: Double) -> Double {
        let peerDevice = Double(peer.localTimeNs) + Double(observer.hostTimeNs &- peer.hostTimeNs) * (1 + peerSkewPPM * 1e-6)
        return peerDevice - Double(observer.localTimeNs)
    }
}
