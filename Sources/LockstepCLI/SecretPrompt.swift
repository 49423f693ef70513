#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A secret (a join code) read from standard input rather than the command line, where `ps` and
/// the shell's history would show it (review finding L4). On a terminal the user is asked, with
/// echo off; otherwise the first line is read (`lockstep group join - < code.txt`).
enum SecretPrompt {
    enum Failure: Error, CustomStringConvertible {
        case empty
        case tooLong

        var description: String {
            switch self {
            case .empty: "no code given on standard input"
            case .tooLong: "the code on standard input is longer than 1024 bytes: not a code"
            }
        }
    }

    /// Reads one line from `fd`, asking `prompt` on standard error when `fd` is a terminal (its
    /// echo off meanwhile). Surrounding white space is dropped.
    static func read(_ prompt: String, from fd: Int32 = STDIN_FILENO) throws(Failure) -> String {
        var saved = termios()
        let terminal = isatty(fd) == 1 && tcgetattr(fd, &saved) == 0
        if terminal {
            say(prompt)
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            _ = tcsetattr(fd, TCSAFLUSH, &quiet)
        }
        defer {
            if terminal {
                _ = tcsetattr(fd, TCSAFLUSH, &saved)
                say("\n")
            }
        }
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while Glibc.read(fd, &byte, 1) == 1, byte != UInt8(ascii: "\n") {
            bytes.append(byte)
            if bytes.count > 1024 { throw .tooLong }
        }
        let text = String(decoding: bytes, as: UTF8.self).trimmingWhitespace()
        guard !text.isEmpty else { throw .empty }
        return text
    }
}

/// Writes to standard error without stdio's shared state.
private func say(_ text: String) {
    var bytes = Array(text.utf8)
    _ = write(STDERR_FILENO, &bytes, bytes.count)
}

private extension String {
    func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        return String(scalars[first...last])
    }
}
