extension ClockEstimator {
    /// What happened to a sample given to ``ClockEstimator/onSample(_:)``.
    public enum SampleVerdict: Sendable, Equatable {
        /// Used in the estimate.
        case accepted
        /// Impossible timestamps (overflow, time running backwards, negative delay).
        case rejectedInvalid
        /// Delayed too much (queueing, scheduling) to be worth keeping; `excessNs` over the minimum.
        case rejectedDelay(excessNs: Int64)
        /// Inconsistent with the estimate beyond any path asymmetry; held as evidence of a step.
        case rejectedOutlier(residualNs: Double)
        /// The peer's clock jumped by about `byNs`: the window was restarted from the new samples.
        /// The caller should speed exchanges up again (``ExchangeScheduler/restartBurst(at:)``).
        case clockStepped(byNs: Double)
    }
}
