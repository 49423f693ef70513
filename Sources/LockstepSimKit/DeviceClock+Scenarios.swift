import LockstepCore

extension DeviceClock {
    /// The worst clocks of the brief: 30 s ahead, 200 ppm fast.
    public static let fastFar = DeviceClock(offsetNs: 30 * Nanos.second, skewPPM: 200, epochNs: 0)
    /// 30 s behind, 200 ppm slow.
    public static let slowFar = DeviceClock(offsetNs: -30 * Nanos.second, skewPPM: -200, epochNs: 0)
}
