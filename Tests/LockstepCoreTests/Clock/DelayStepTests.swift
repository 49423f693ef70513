@testable import LockstepCore
import Testing

/// ``DelayStep`` alone: how far a rise may have moved the offset, and what explains it.
@Suite("Delay step")
struct DelayStepTests {
    /// A fit on a 40 µs path: offset 1 ms, skew `slope`, statistical scales of `sigma` (offset)
    /// and none for the skew.
    static func anchor(slope: Double = 0, sigma: Double = 100, reference: Int64 = 0) -> EnvelopeFit.Fit {
        EnvelopeFit.Fit(
            reference: reference, offset: 1_000_000, slope: slope, support: 0, sigmaOffset: sigma, sigmaSlope: 0,
            hardBound: 20_000, hardSlopeError: 0, minDelay: 40_100, envelopeDelay: 40_000.5, count: 100, statistical: true)
    }

    @Test("the rise is from the old envelopes' round trip, and may have moved the offset by half of it, on the peer's clock")
    func bias() {
        let step = DelayStep(after: 5_040_000, threshold: 50_000, anchor: Self.anchor(slope: 400e-6))
        #expect(step.before == 40_000)
        #expect(step.riseNs == 5_000_000)
        #expect(step.bias == 2_500_000 * 1.0004)
        #expect(!step.explained)
    }

    @Test("a further rise adds half of it")
    func rises() {
        var step = DelayStep(after: 1_040_000, threshold: 50_000, anchor: Self.anchor())
        step.rose(to: 3_040_000)
        #expect(step.riseNs == 3_000_000)
        #expect(step.bias == 1_500_000)
    }

    @Test("a sample back near the old minimum ends it; slower ones only lower the new minimum")
    func kept() {
        var step = DelayStep(after: 5_040_000, threshold: 50_000, anchor: Self.anchor())
        var stays = step.kept(delay: 5_100_000)
        #expect(stays && step.after == 5_040_000)
        stays = step.kept(delay: 5_030_000)
        #expect(stays && step.after == 5_030_000)
        // Back: within the threshold (50 µs) of the old minimum, here nearer than half the rise.
        var copy = step
        stays = copy.kept(delay: 90_001)
        #expect(stays)
        copy = step
        stays = copy.kept(delay: 90_000)
        #expect(!stays)
        // A rise smaller than the threshold (a jittery path): back means nearer the old minimum.
        let small = DelayStep(after: 100_000, threshold: 50_000, anchor: Self.anchor())
        copy = small
        stays = copy.kept(delay: 70_001)
        #expect(stays)
        copy = small
        stays = copy.kept(delay: 70_000)
        #expect(!stays)
    }

    @Test("a fit on the new path that agrees with the anchor explains the rise and shrinks the allowance to the comparison's precision")
    func explained() {
        var step = DelayStep(after: 5_040_000, threshold: 50_000, anchor: Self.anchor())
        var fit = Self.anchor(reference: 10 * Nanos.second)
        fit.offset += 300  // within 4.5 · √2 · 100 ns
        step.measure(fit, configuration: .init())
        #expect(step.explained)
        // |300| + 4.5 · √(100² + 100²) + 0.05 ppm · 10 s
        #expect((step.bias - (300 + 4.5 * 20_000.0.squareRoot() + 500)).magnitude < 1e-6)
    }

    @Test("a fit on the new path half the rise away keeps the allowance at half the rise, and the alarm")
    func oneSided() {
        var step = DelayStep(after: 5_040_000, threshold: 50_000, anchor: Self.anchor())
        var fit = Self.anchor(reference: 10 * Nanos.second)
        fit.offset += 2_500_000
        step.measure(fit, configuration: .init())
        #expect(!step.explained)
        #expect(step.bias == 2_500_000)
    }

    @Test("a comparison too imprecise to have seen a quarter of a one-sided rise does not explain it, though it bounds the move")
    func imprecise() {
        var step = DelayStep(after: 5_040_000, threshold: 50_000, anchor: Self.anchor())
        step.measure(Self.anchor(sigma: 400_000, reference: Nanos.second), configuration: .init())
        #expect(!step.explained)
        // No move, within 4.5 · √(400 µs² + 100 ns²) + 0.05 ppm · 1 s = 1.8 ms (> 5 ms / 4).
        #expect((step.bias - 1_800_050.06).magnitude < 0.01)
    }
}
