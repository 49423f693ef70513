#if canImport(Glibc)
import Glibc
#endif
import Testing

@testable import LockstepCLI

/// Review finding L4: a join code can come on standard input instead of the command line.
@Suite("Secret prompt")
struct SecretPromptTests {
    /// A pipe whose read end holds `text`, closed for writing.
    static func pipe(_ text: String) -> Int32 {
        var fds: [Int32] = [0, 0]
        _ = Glibc.pipe(&fds)
        _ = text.utf8CString.withUnsafeBufferPointer { write(fds[1], $0.baseAddress, $0.count - 1) }
        close(fds[1])
        return fds[0]
    }

    @Test("the first line of a pipe is the code, without its surrounding white space")
    func firstLine() throws {
        let fd = Self.pipe("  1234-5678 \nsecond line\n")
        defer { close(fd) }
        #expect(try SecretPrompt.read("join code: ", from: fd) == "1234-5678")
    }

    @Test("an empty input or a line over 1024 bytes is refused with a clear reason")
    func refused() {
        let empty = Self.pipe("\n")
        defer { close(empty) }
        #expect(throws: SecretPrompt.Failure.empty) { try SecretPrompt.read("", from: empty) }
        let long = Self.pipe(String(repeating: "7", count: 2000))
        defer { close(long) }
        #expect(throws: SecretPrompt.Failure.tooLong) { try SecretPrompt.read("", from: long) }
    }
}
