/// Numbers as fixed-width text, for what `String(format:)` did: that lives in full Foundation,
/// which the agent does not link.
public enum Digits {
    /// `value` in `radix` (lowercase), left-padded with zeros to at least `width` digits.
    public static func padded(_ value: some BinaryInteger, radix: Int = 10, width: Int) -> String {
        let digits = String(value.magnitude, radix: radix)
        let pad = String(repeating: "0", count: max(0, width - digits.count))
        return (value < 0 ? "-" : "") + pad + digits
    }

    /// Bytes as lowercase hex, two digits each.
    public static func hex(_ bytes: some Sequence<UInt8>) -> String {
        var out = ""
        for b in bytes { out += padded(b, radix: 16, width: 2) }
        return out
    }

    /// `value` rounded to `places` decimals (0...9), for `%.Nf`: `fixed(1.23456, places: 3)` is
    /// "1.235". Halves round away from zero, and a result of zero has no minus sign.
    public static func fixed(_ value: Double, places: Int) -> String {
        let places = min(max(places, 0), 9)
        var scale: Double = 1
        for _ in 0..<places { scale *= 10 }
        let scaled = (abs(value) * scale).rounded()
        // Past 2^53 the fraction is gone anyway; non-finite values print as Swift does.
        guard value.isFinite, scaled < 9e15 else { return "\(value)" }
        let units = Int64(scaled)
        let whole = units / Int64(scale)
        let fraction = units % Int64(scale)
        let sign = value < 0 && units != 0 ? "-" : ""
        return sign + String(whole) + (places > 0 ? "." + padded(fraction, width: places) : "")
    }
}
