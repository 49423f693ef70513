/// Time units as `Int64` nanoseconds, so that `3 * .second` reads as what it is.
public enum Nanos {
    public static let microsecond: Int64 = 1_000
    public static let millisecond: Int64 = 1_000_000
    public static let second: Int64 = 1_000_000_000

    /// Nanoseconds from seconds, rounded to the nearest nanosecond (saturating; NaN is 0).
    @inline(__always)
    public static func from(seconds: Double) -> Int64 {
        Int64(saturating: (seconds * 1e9).rounded())
    }

    /// Seconds from nanoseconds.
    @inline(__always)
    public static func seconds(_ ns: Int64) -> Double {
        Double(ns) / 1e9
    }
}
