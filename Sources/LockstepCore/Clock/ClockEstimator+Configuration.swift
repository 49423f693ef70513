extension ClockEstimator {
    /// Tuning. The defaults suit a LAN and a 2–40 Hz exchange rate (``ExchangeScheduler``).
    public struct Configuration: Sendable, Equatable {
        /// Most samples in the window (memory: 24 bytes each, plus scratch of the same order).
        public var capacity: Int
        /// Samples older than this (relative to the newest) leave the window. Longer windows
        /// average more but trust the skew to stay constant for longer.
        public var maxSampleAge: TimeSpan
        /// Scale of offset noise that no delay shows (timestamp resolution), in ns.
        public var noiseFloorNs: Double
        /// `z`: the statistical bound is this many scales (see the type's documentation).
        public var boundSigmas: Double
        /// `k`: weight of the skew's scale in the bound, away from where the envelopes rest.
        public var edgeGrowth: Double
        /// Samples needed before the statistical bound is used (the hard bound until then).
        public var minStatisticalSamples: Int
        /// Assumed clock wander: how fast the offset may drift away from the line, in ppm. A
        /// crystal wanders far less than this over a second; a clock being slewed by NTP does not
        /// (run the agent on a clock nobody slews, or expect bounds to be broken while it is).
        public var wanderPPM: Double
        /// The largest skew believed possible, in ppm.
        public var maxSkewPPM: Double
        /// Prior standard deviation of the skew, in ppm: a skew measured over a short or noisy
        /// window is shrunk towards zero by `prior² / (prior² + σₛ²)`.
        public var skewPriorPPM: Double
        /// A sample whose delay excess exceeds this multiple of the window's mean excess is not kept…
        public var delayGateFactor: Double
        /// …unless its excess is below this.
        public var minDelayGate: TimeSpan
        /// After this many delay rejections in a row, the gate opens (the path has changed).
        public var maxConsecutiveDelayRejections: Int
        /// This many slow samples in a row (see ``delayStepFactor``) are a delay step: an alarm,
        /// a restarted window and a wider statistical bound until the path is back (`DelayStep`).
        /// A long run with a low bar tells a rise from jitter better than a short one with a high
        /// bar (the chance that the old path's samples all clear it falls as its power).
        public var delayStepSamples: Int
        /// A sample whose excess over the window's minimum delay exceeds this multiple of the
        /// mean excess (and ``minDelayGate``) is slow, whether or not the gate lets it in.
        public var delayStepFactor: Double
        /// A sample whose round trip exceeds this is never kept, however many come (chrony's
        /// `maxdelay`). The default is the exchange timeout (``ExchangeScheduler``): a slower
        /// reply is lost anyway.
        public var maxDelay: TimeSpan
        /// How far outside the hard bound a sample must fall to count as a clock step, in ns.
        public var stepThresholdNs: Double
        /// How many agreeing outliers in a row make a clock step.
        public var stepConfirmations: Int

        /// The defaults are the figures the simulations (`Tests/…/Clock`) were calibrated with.
        public init(
            capacity: Int = 512,
            maxSampleAge: TimeSpan = .seconds(60),
            noiseFloorNs: Double = 10,
            boundSigmas: Double = 4.5,
            edgeGrowth: Double = 2,
            minStatisticalSamples: Int = 4,
            wanderPPM: Double = 0.05,
            maxSkewPPM: Double = 1000,
            skewPriorPPM: Double = 300,
            delayGateFactor: Double = 8,
            minDelayGate: TimeSpan = .microseconds(50),
            maxConsecutiveDelayRejections: Int = 8,
            delayStepSamples: Int = 32,
            delayStepFactor: Double = 1,
            maxDelay: TimeSpan = .seconds(1),
            stepThresholdNs: Double = 100_000,
            stepConfirmations: Int = 3
        ) {
            precondition(capacity >= 4 && stepConfirmations >= 1 && minStatisticalSamples >= 3 && delayStepSamples >= 1)
            self.capacity = capacity
            self.maxSampleAge = maxSampleAge
            self.noiseFloorNs = noiseFloorNs
            self.boundSigmas = boundSigmas
            self.edgeGrowth = edgeGrowth
            self.minStatisticalSamples = minStatisticalSamples
            self.wanderPPM = wanderPPM
            self.maxSkewPPM = maxSkewPPM
            self.skewPriorPPM = skewPriorPPM
            self.delayGateFactor = delayGateFactor
            self.minDelayGate = minDelayGate
            self.maxConsecutiveDelayRejections = maxConsecutiveDelayRejections
            self.delayStepSamples = delayStepSamples
            self.delayStepFactor = delayStepFactor
            self.maxDelay = maxDelay
            self.stepThresholdNs = stepThresholdNs
            self.stepConfirmations = stepConfirmations
        }
    }
}
