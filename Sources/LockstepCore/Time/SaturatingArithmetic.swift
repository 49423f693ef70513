extension Int64 {
    /// The nearest `Int64` to `value`, saturating at the ends; NaN is 0. `Int64(Double)` traps on
    /// anything out of range, so every conversion from a `Double` in the core goes through this.
    @inline(__always)
    public init(saturating value: Double) {
        if value.isNaN {
            self = 0
        } else if value >= 9.223_372_036_854_775_807e18 {
            self = .max
        } else if value <= -9.223_372_036_854_775_808e18 {
            self = .min
        } else {
            self = Int64(value)
        }
    }

    /// `self + other`, saturating at the ends instead of trapping.
    @inline(__always)
    public func addingSaturating(_ other: Int64) -> Int64 {
        let (r, o) = addingReportingOverflow(other)
        return o ? (other > 0 ? .max : .min) : r
    }

    /// `self - other`, saturating at the ends instead of trapping.
    @inline(__always)
    public func subtractingSaturating(_ other: Int64) -> Int64 {
        let (r, o) = subtractingReportingOverflow(other)
        return o ? (other < 0 ? .max : .min) : r
    }

    /// `self × other`, saturating at the ends instead of trapping.
    @inline(__always)
    public func multipliedSaturating(by other: Int64) -> Int64 {
        let (r, o) = multipliedReportingOverflow(by: other)
        return o ? ((self < 0) == (other < 0) ? .max : .min) : r
    }
}

extension UInt64 {
    /// `self + other`, saturating at `UInt64.max` instead of trapping.
    @inline(__always)
    public func addingSaturating(_ other: UInt64) -> UInt64 {
        let (r, o) = addingReportingOverflow(other)
        return o ? .max : r
    }
}
