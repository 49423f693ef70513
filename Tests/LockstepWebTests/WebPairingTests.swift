import Testing

@testable import LockstepWeb

@Suite struct WebPairingTests {
    @Test func theRightCodeGivesASessionAndIsThenReplaced() {
        var p = WebPairing(code: "123456")
        #expect(p.onAttempt("123456", newToken: "t1", nextCode: "654321") == .paired(token: "t1"))
        #expect(p.isValid(token: "t1"))
        #expect(p.code == "654321")
        // One-time: the old code no longer works.
        #expect(p.onAttempt("123456", newToken: "t2", nextCode: "000000") == .wrongCode(triesLeft: 4))
        #expect(!p.isValid(token: "t2"))
    }

    @Test func aCodeTakesFiveWrongTriesThenIsReplaced() {
        var p = WebPairing(code: "123456")
        for left in (1...4).reversed() {
            #expect(p.onAttempt("000000", newToken: "x", nextCode: "999999") == .wrongCode(triesLeft: left))
        }
        #expect(p.onAttempt("000000", newToken: "x", nextCode: "999999") == .codeReplaced)
        #expect(p.code == "999999")
        #expect(p.onAttempt("123456", newToken: "x", nextCode: "111111") == .wrongCode(triesLeft: 4))
    }

    @Test func pairingClosesAfterTwentyWrongCodes() {
        var p = WebPairing(code: "123456")
        var outcomes: [WebPairing.Outcome] = []
        for _ in 0..<WebPairing.maxFailures { outcomes.append(p.onAttempt("000000", newToken: "x", nextCode: "123456")) }
        #expect(outcomes.last == .closed)
        #expect(p.onAttempt(p.code, newToken: "t", nextCode: "222222") == .closed)
        #expect(!p.isValid(token: "t"))
    }

    @Test(arguments: ["", "12345", "1234567", "12a456", "１２３４５６"])
    func textThatIsNotACodeCostsNoTry(attempt: String) {
        var p = WebPairing(code: "123456")
        #expect(p.onAttempt(attempt, newToken: "x", nextCode: "1") == .notACode)
        #expect(p.onAttempt("000000", newToken: "x", nextCode: "1") == .wrongCode(triesLeft: 4))
    }

    @Test func noTokenOrAnUnknownOneIsNotASession() {
        var p = WebPairing(code: "123456")
        _ = p.onAttempt("123456", newToken: "abc", nextCode: "1")
        #expect(!p.isValid(token: nil))
        #expect(!p.isValid(token: ""))
        #expect(!p.isValid(token: "abd"))
    }

    @Test func theOldestSessionIsForgottenPastTheLimit() {
        var p = WebPairing(code: "000000")
        for i in 0...WebPairing.maxSessions {
            _ = p.onAttempt(p.code, newToken: "t\(i)", nextCode: String(format: "%06d", i + 1))
        }
        #expect(!p.isValid(token: "t0"))
        #expect(p.isValid(token: "t1"))
        #expect(p.isValid(token: "t\(WebPairing.maxSessions)"))
    }
}
