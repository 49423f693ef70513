#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LockstepCore

/// How long one direction of a link takes: a base, a jitter, rare large delays (scheduling,
/// queueing) and loss. Times are nanoseconds of the simulation's true time.
public struct LegModel: Sendable {
    public enum Jitter: Sendable {
        case none
        /// Uniform in `[0, widthNs)`, added to the base.
        case uniform(widthNs: Double)
        /// Exponential with mean `meanNs`, added to the base.
        case exponential(meanNs: Double)
        /// The sum of two exponentials, each with mean `meanNs / 2` (two queues in a row).
        case twoStage(meanNs: Double)
        /// A path that drifts in and out of a fast regime, as the lab's bridge does: a packet is
        /// fast (exponential, mean `fastMeanNs`) with a probability that alternates between
        /// `fastShare.high` and `fastShare.low` every `periodNs` (starting at `phaseNs`), and
        /// otherwise slow (`slowExtraNs` plus an exponential of mean `slowMeanNs`).
        case regimes(fastMeanNs: Double, slowExtraNs: Double, slowMeanNs: Double, fastShare: (high: Double, low: Double), periodNs: Int64, phaseNs: Int64)
    }

    public var baseNs: Int64
    public var jitter: Jitter
    /// Probability of a large extra delay, uniform in `spikeRangeNs`.
    public var spikeProbability: Double
    public var spikeRangeNs: ClosedRange<Double>
    public var loss: Double
    /// From true time `atNs` on, every packet takes `extraNs` longer (a route change, or an
    /// on-path attacker holding this direction's packets).
    public var step: (atNs: Int64, extraNs: Int64)?
    /// The base creeps up by `amplitudeNs` and back down again every `periodNs` (a triangle, from
    /// true time 0): a minimum delay that drifts in this direction only, as a queue or a softirq
    /// moving between cores makes the lab's bridge do by a few µs within a minute.
    public var creep: (amplitudeNs: Double, periodNs: Int64)?

    public init(
        baseNs: Int64, jitter: Jitter = .none, spikeProbability: Double = 0,
        spikeRangeNs: ClosedRange<Double> = 100_000...2_000_000, loss: Double = 0, step: (atNs: Int64, extraNs: Int64)? = nil,
        creep: (amplitudeNs: Double, periodNs: Int64)? = nil
    ) {
        self.baseNs = baseNs
        self.jitter = jitter
        self.spikeProbability = spikeProbability
        self.spikeRangeNs = spikeRangeNs
        self.loss = loss
        self.step = step
        self.creep = creep
    }

    /// A veth between two namespaces: ~20 µs, a few µs of noise, rare 100 µs – 2 ms spikes.
    public static let veth = LegModel(baseNs: 20_000, jitter: .exponential(meanNs: 3_000), spikeProbability: 0.01)

    /// One leg of netem `delay 5ms 1ms distribution uniform`: 4–6 ms.
    public static let netemJitter = LegModel(baseNs: 4_000_000, jitter: .uniform(widthNs: 2_000_000))

    /// A bridge between lab namespaces, as measured with kernel timestamps on these machines:
    /// 4 µs at best; fast packets (+1.5 µs) come in episodes, most take 10–30 µs. `phaseNs`
    /// sets where a direction's episodes fall (each direction has its own).
    public static func labBridge(phaseNs: Int64) -> LegModel {
        LegModel(baseNs: 4_000, jitter: .regimes(fastMeanNs: 1_500, slowExtraNs: 5_000, slowMeanNs: 8_000, fastShare: (0.3, 0.02), periodNs: 20 * Nanos.second, phaseNs: phaseNs))
    }

    /// A random one-way delay for a packet sent at true time `t`, or nil if the packet is lost.
    public func draw(_ rng: inout SplitMix64, at t: Int64 = 0) -> Int64? {
        if rng.chance(loss) { return nil }
        var d = Double(baseNs)
        switch jitter {
        case .none: break
        case .uniform(let width): d += rng.unit() * width
        case .exponential(let mean): d += -mean * log1p(-rng.unit())
        case .twoStage(let mean): d += -mean / 2 * (log1p(-rng.unit()) + log1p(-rng.unit()))
        case .regimes(let fast, let slowExtra, let slow, let share, let period, let phase):
            let high = ((t &+ phase) / period) % 2 == 0
            if rng.chance(high ? share.high : share.low) {
                d += -fast * log1p(-rng.unit())
            } else {
                d += slowExtra - slow * log1p(-rng.unit())
            }
        }
        if rng.chance(spikeProbability) {
            d += spikeRangeNs.lowerBound + rng.unit() * (spikeRangeNs.upperBound - spikeRangeNs.lowerBound)
        }
        if let creep, creep.periodNs > 0 {
            let phase = Double(t.magnitude % UInt64(creep.periodNs)) / Double(creep.periodNs)
            d += creep.amplitudeNs * (1 - (2 * phase - 1).magnitude)
        }
        if let step, t >= step.atNs { return Int64(d) + step.extraNs }
        return Int64(d)
    }
}
