import LockstepCore

extension SplitMix64 {
    /// Uniform in [0, 1).
    public mutating func unit() -> Double { Double(next() >> 11) * 0x1p-53 }

    /// True with probability `p` (never for `p ≤ 0`).
    public mutating func chance(_ p: Double) -> Bool { p > 0 && unit() < p }
}
