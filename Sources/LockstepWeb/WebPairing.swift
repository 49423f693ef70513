/// Pairing a browser with this agent: the agent shows a short one-time code (in its log and in
/// a file beside its socket); a browser that sends it gets a session token (an HttpOnly,
/// SameSite=Strict cookie). Pure: the shell passes in the fresh random code and token.
///
/// - A code works once: a successful pairing replaces it.
/// - A code takes ``triesPerCode`` wrong guesses, then it is replaced (a 6-digit code then resists
///   guessing: 5 tries in 10⁶).
/// - After ``maxFailures`` wrong guesses in all, pairing closes until the agent restarts: a
///   device on the LAN cannot grind through codes.
/// - At most ``maxSessions`` sessions; the oldest is forgotten first.
public struct WebPairing: Sendable {
    public static let triesPerCode = 5
    public static let maxFailures = 20
    public static let maxSessions = 64
    /// Digits in a code.
    public static let codeLength = 6

    /// The code a browser must send now.
    public private(set) var code: String
    private var triesLeft = WebPairing.triesPerCode
    private var failures = 0
    private var sessions: [String] = []

    public init(code: String) {
        self.code = code
    }

    /// What an attempt led to.
    public enum Outcome: Sendable, Equatable {
        /// Paired: set this token as the session cookie. The code was replaced by the next one.
        case paired(token: String)
        /// Wrong code; this many tries are left on it.
        case wrongCode(triesLeft: Int)
        /// Wrong code, its last try: it was replaced by the next one (show it on the agent).
        case codeReplaced
        /// Too many wrong codes since the agent started: pairing is closed.
        case closed
        /// The text sent is not a code (wrong length or not digits): not counted as a try.
        case notACode
    }

    /// A browser sent `attempt`. `newToken` and `nextCode` are fresh random values from the shell.
    public mutating func onAttempt(_ attempt: String, newToken: String, nextCode: String) -> Outcome {
        guard failures < Self.maxFailures else { return .closed }
        guard attempt.utf8.count == Self.codeLength, attempt.utf8.allSatisfy({ (48...57).contains($0) }) else { return .notACode }
        if Self.equalInConstantTime(attempt, code) {
            code = nextCode
            triesLeft = Self.triesPerCode
            sessions.append(newToken)
            if sessions.count > Self.maxSessions { sessions.removeFirst() }
            return .paired(token: newToken)
        }
        failures += 1
        triesLeft -= 1
        if failures >= Self.maxFailures { return .closed }
        if triesLeft == 0 {
            code = nextCode
            triesLeft = Self.triesPerCode
            return .codeReplaced
        }
        return .wrongCode(triesLeft: triesLeft)
    }

    /// Whether `token` is a session of this agent's life.
    public func isValid(token: String?) -> Bool {
        guard let token, !token.isEmpty else { return false }
        return sessions.contains { Self.equalInConstantTime($0, token) }
    }

    static func equalInConstantTime(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var diff: UInt8 = 0
        for i in x.indices { diff |= x[i] ^ y[i] }
        return diff == 0
    }
}
