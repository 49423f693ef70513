import ArgumentParser
import Foundation

/// The agent's web endpoint (`lockstepd --web`): what a person at the agent's device needs to let
/// a browser on another device in.
struct Web: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The agent's web endpoint (lockstepd --web): the pairing code for browsers on other devices.",
        subcommands: [Code.self])

    struct Code: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the 6-digit code a browser on another device types to pair with this agent (kept beside the agent's socket, readable by its user only).",
            discussion: "A browser on this device (the agent's loopback address) needs no code. Each code is replaced after 5 wrong tries; after 20, pairing closes until the agent restarts.")
        @OptionGroup var options: CommonOptions

        func run() throws {
            let path = options.socketPath + ".web-code"
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                printError("no web pairing code at \(Terminal.escaped(path)): is lockstepd running with --web (and is this its socket, or its user)?")
                throw ExitCode(1)
            }
            let code = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard code.count == 6, code.allSatisfy(\.isASCII), code.allSatisfy(\.isNumber) else {
                printError("\(Terminal.escaped(path)) does not hold a pairing code")
                throw ExitCode(1)
            }
            print(options.json ? "{\"code\" : \"\(code)\"}" : code)
        }
    }
}
