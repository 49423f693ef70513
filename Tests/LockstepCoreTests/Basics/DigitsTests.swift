import Testing

@testable import LockstepCore

/// `Digits` replaces `String(format:)` in the agent (which does not link full Foundation): the
/// same text as `%0Nd`, `%0Nx`, `%02x` per byte and `%.Nf` printed.
@Suite struct DigitsTests {
    @Test func paddedFillsWithZerosToTheWidthInTheRadix() {
        #expect(Digits.padded(42, width: 6) == "000042")
        #expect(Digits.padded(999_999, width: 6) == "999999")
        #expect(Digits.padded(1_234_567, width: 6) == "1234567")
        #expect(Digits.padded(UInt32(0xbeef), radix: 16, width: 8) == "0000beef")
        #expect(Digits.padded(UInt32.max, radix: 16, width: 8) == "ffffffff")
        #expect(Digits.padded(-7, width: 3) == "-007")
    }

    @Test func hexIsTwoLowercaseDigitsPerByte() {
        #expect(Digits.hex([0x00, 0x0f, 0xa0, 0xff]) == "000fa0ff")
        #expect(Digits.hex([UInt8]()) == "")
    }

    @Test(arguments: [
        (1.23456, 3, "1.235"), (0.0005, 3, "0.001"), (-0.0004, 3, "0.000"), (-2.5, 1, "-2.5"),
        (12.0, 0, "12"), (1e-9, 3, "0.000"), (-1234.5678, 2, "-1234.57"), (0.1, 3, "0.100"),
    ])
    func fixedRoundsToThePlacesAskedWithNoMinusOnZero(value: Double, places: Int, text: String) {
        #expect(Digits.fixed(value, places: places) == text)
    }

    @Test func fixedLeavesNumbersPastTheFractionsReachAsSwiftPrintsThem() {
        #expect(Digits.fixed(.infinity, places: 3) == "inf")
        #expect(Digits.fixed(.nan, places: 3) == "nan")
        #expect(Digits.fixed(1e300, places: 3) == "1e+300")
    }
}
