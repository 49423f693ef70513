import Testing

@testable import LockstepCore

@Suite struct TrimmedTests {
    @Test func whitespaceAndNewlinesGoFromBothEndsOnly() {
        #expect("  a b \n".trimmed() == "a b")
        #expect("\t\r\n".trimmed() == "")
        #expect("".trimmed() == "")
        #expect("x".trimmed() == "x")
        #expect("a,  b ".split(separator: ",").map { $0.trimmed() } == ["a", "b"])
    }

    @Test func aPredicateChoosesWhatGoes() {
        #expect("[fe80::1]".trimmed(where: { $0 == "[" || $0 == "]" }) == "fe80::1")
        #expect("[[]]".trimmed(where: { $0 == "[" || $0 == "]" }) == "")
        #expect(" [a] ".trimmed(where: { $0 == "[" || $0 == "]" }) == " [a] ")
    }
}
