#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import LockstepMPV

/// What avahi-daemon knows of `_lockstep._udp` on the network, asked the way an administrator
/// would (`avahi-browse -rtp _lockstep._udp`): the doctor sees every Lockstep agent that
/// announces itself, including those of other groups, which the agent itself skips unseen.
public enum MDNSBrowser {
    /// One announced agent on one interface and address family.
    public struct Service: Sendable, Equatable, Codable {
        public var interface: String
        public var name: String
        public var address: String?
        public var port: UInt16?
        /// The TXT record's `key=value` strings (`id`, `g`, `n`, `v`).
        public var txt: [String: String]

        public init(interface: String, name: String, address: String?, port: UInt16?, txt: [String: String]) {
            self.interface = interface
            self.name = name
            self.address = address
            self.port = port
            self.txt = txt
        }

        public var peerID: String? { txt["id"] }
        public var groupTag: String? { txt["g"] }
        public var peerName: String { txt["n"] ?? name }
        public var peerProtocol: String? { txt["v"] }
    }

    public enum Outcome: Sendable, Equatable {
        case services([Service])
        /// avahi-browse ran but could not talk to avahi-daemon (its message).
        case daemonUnavailable(String)
        /// avahi-browse is not installed.
        case toolMissing
        /// avahi-browse failed otherwise, or did not finish in time.
        case failed(String)
    }

    /// Runs `avahi-browse -rtp _lockstep._udp`, stopped after `timeout` seconds.
    public static func browse(timeout: Double = 6) -> Outcome {
        guard let tool = executable("avahi-browse") else { return .toolMissing }
        let tag = "\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let outPath = "/tmp/.lockstep-doctor-\(tag).out", errPath = "/tmp/.lockstep-doctor-\(tag).err"
        defer {
            unlink(outPath)
            unlink(errPath)
        }
        let pid: pid_t
        do {
            pid = try PosixSpawn.spawn([tool, "-rtp", "_lockstep._udp"], environment: ProcessInfo.processInfo.environment, stdout: outPath, stderr: errPath)
        } catch {
            return .failed("cannot run \(tool): \(error)")
        }
        // Waited for by polling: Foundation's Process can miss a child's exit (see Shell).
        var status: Int32 = 0
        let deadline = Date().addingTimeInterval(timeout)
        var finished = false
        while Date() < deadline {
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid { finished = true; break }
            if r < 0 && errno != EINTR { break }
            usleep(20_000)
        }
        if !finished {
            kill(pid, SIGKILL)
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            return .failed("avahi-browse did not finish within \(Int(timeout)) s")
        }
        let out = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
        let err = ((try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        if PosixSpawn.exitStatus(status) != 0 {
            let message = err.split(separator: "\n").last.map(String.init) ?? "exit status \(PosixSpawn.exitStatus(status))"
            return message.contains("Daemon not running") || message.contains("daemon") ? .daemonUnavailable(message) : .failed(message)
        }
        return .services(parse(out))
    }

    /// The resolved entries (`=` lines) of avahi-browse's parsable output.
    ///
    ///     =;eth0;IPv4;h2;_lockstep._udp;local;vm-2.local;10.77.0.2;40123;"v=1" "id=…" "g=…" "n=h2"
    public static func parse(_ text: String) -> [Service] {
        text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: ";", maxSplits: 9, omittingEmptySubsequences: false)
            guard fields.count == 10, fields[0] == "=" else { return nil }
            return Service(
                interface: String(fields[1]), name: unescape(fields[3]), address: fields[7].isEmpty ? nil : String(fields[7]),
                port: UInt16(fields[8]), txt: txtRecord(fields[9]))
        }
    }

    /// `"a=1" "b=2"`: each string quoted, backslash escapes inside (`\"`, `\\`, `\DDD`).
    static func txtRecord(_ text: Substring) -> [String: String] {
        var strings: [String] = []
        var current: [UInt8] = []
        var inside = false
        var bytes = Array(text.utf8)[...]
        while let b = bytes.popFirst() {
            if !inside {
                if b == UInt8(ascii: "\"") { inside = true; current = [] }
                continue
            }
            switch b {
            case UInt8(ascii: "\""):
                inside = false
                strings.append(String(decoding: current, as: UTF8.self))
            case UInt8(ascii: "\\"):
                current.append(contentsOf: unescapeOne(&bytes))
            default:
                current.append(b)
            }
        }
        var record: [String: String] = [:]
        for s in strings {
            let parts = s.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            record[String(parts[0])] = parts.count == 2 ? String(parts[1]) : ""
        }
        return record
    }

    /// A service name as avahi prints it: `Living\032Room` is "Living Room".
    static func unescape(_ text: Substring) -> String {
        var out: [UInt8] = []
        var bytes = Array(text.utf8)[...]
        while let b = bytes.popFirst() {
            if b == UInt8(ascii: "\\") { out.append(contentsOf: unescapeOne(&bytes)) } else { out.append(b) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// After a backslash: three decimal digits are a byte, anything else stands for itself.
    private static func unescapeOne(_ bytes: inout ArraySlice<UInt8>) -> [UInt8] {
        let digits = bytes.prefix(3)
        if digits.count == 3, digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
            let value = UInt8(String(decoding: digits, as: UTF8.self))
        {
            bytes.removeFirst(3)
            return [value]
        }
        return bytes.popFirst().map { [$0] } ?? []
    }

    /// The first `name` on PATH (or in /usr/bin, /usr/sbin when PATH is bare, as under systemd).
    static func executable(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        for dir in path.split(separator: ":").map(String.init) + ["/usr/bin", "/usr/sbin", "/bin"] {
            let candidate = dir + "/" + name
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }
}
