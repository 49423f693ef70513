#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LockstepCore
import LockstepPlayerProtocol
import Logging

/// `lockstepd`'s options as given on its command line (nil: not given), before they are
/// checked. Each also has an environment variable (`LOCKSTEP_` and the option's name in
/// capitals); a flag wins over the variable. ``configuration(environment:)`` checks every value
/// once, here, and names the option and its range in the error.
public struct DaemonOptions: Sendable {
    public var socket: String?
    public var socketMode: String?
    public var socketGroup: String?
    public var stateDir: String?
    public var name: String?
    public var group: String?
    public var joinCode: String?
    public var port: String?
    public var logLevel: String?
    public var peers: [String] = []
    public var noMDNS = false
    public var peerTimeout: String?
    public var fullMeshUpTo: String?
    public var waitingReasons: String?
    public var waitTimeout: String?
    public var simClockOffset: String?
    public var simClockSkew: String?
    public var impair: String?
    public var impairTo: [String] = []
    public var testHooks = false
    /// `--web [ADDR:]PORT` and `--web-media DIR` (the web endpoint, Sources/LockstepWeb).
    public var web: String?
    public var webMedia: String?

    public init() {}

    /// `--web` and `--web-media` as given (flag, else LOCKSTEP_WEB / LOCKSTEP_WEB_MEDIA); checked by LockstepWeb.
    public func webSettings(environment env: [String: String]) -> (endpoint: String?, mediaDirectory: String?) {
        func setting(_ flag: String?, _ variable: String) -> String? {
            flag ?? env["LOCKSTEP_" + variable].flatMap { $0.isEmpty ? nil : $0 }
        }
        return (setting(web, "WEB"), setting(webMedia, "WEB_MEDIA"))
    }

    /// A value the options refuse.
    public struct Invalid: Error, Equatable, CustomStringConvertible {
        public var description: String
    }

    /// The ranges of `lockstepd`'s numeric options.
    public enum Ranges {
        /// `--peer-timeout`, seconds: longer than nothing, shorter than an hour.
        public static let peerTimeoutSeconds: ClosedRange<Double> = 0.1...3600
        /// `--full-mesh-up-to`, peers: 0 (always the grid) up to as many as a group can have.
        public static let fullMeshPeers: ClosedRange<Int> = 0...Membership.Configuration().maxPeers
        /// `--wait-timeout`, seconds.
        public static let waitTimeoutSeconds: ClosedRange<Double> = 0...3600
        /// `--sim-clock-offset`, seconds (test hook).
        public static let simClockOffsetSeconds: ClosedRange<Double> = -86_400...86_400
        /// `--sim-clock-skew`, ppm (test hook).
        public static let simClockSkewPPM: ClosedRange<Double> = PlayerLimits.simSkewPPM
    }

    /// The agent's configuration and the log level, from these options and `environment`.
    public func configuration(environment env: [String: String]) throws(Invalid) -> (AgentConfiguration, Logger.Level) {
        func setting(_ flag: String?, _ variable: String) -> String? {
            flag ?? env["LOCKSTEP_" + variable].flatMap { $0.isEmpty ? nil : $0 }
        }
        func seconds(_ text: String?, _ option: String, within range: ClosedRange<Double>) throws(Invalid) -> Double? {
            guard let text else { return nil }
            guard let s = Double(text), range.contains(s) else {
                throw Invalid(description: "\(option) must be a number of seconds within \(range.lowerBound)...\(range.upperBound), not '\(text.prefix(32))'")
            }
            return s
        }

        let levelText = setting(logLevel, "LOG_LEVEL") ?? "info"
        guard let level = Logger.Level(rawValue: levelText.lowercased()) else {
            throw Invalid(description: "unknown log level '\(levelText.prefix(32))' (trace, debug, info, notice, warning, error, critical)")
        }
        var config = AgentConfiguration(
            socketPath: setting(socket, "SOCKET") ?? PlayerProtocol.defaultSocketPath(environment: env.filter { $0.key != "LOCKSTEP_SOCKET" }),
            stateDirectory: setting(stateDir, "STATE_DIR") ?? StateDirectory.defaultPath(environment: env))
        config.name = setting(name, "NAME")
        config.group = setting(group, "GROUP")
        config.joinCode = setting(joinCode, "JOIN_CODE")
        if let text = setting(socketMode, "SOCKET_MODE") {
            guard let mode = UInt32(text, radix: 8), mode <= 0o777 else { throw Invalid(description: "--socket-mode must be octal, e.g. 0600 or 0660") }
            config.socketMode = mode
        }
        if let text = setting(socketGroup, "SOCKET_GROUP") {
            if let gid = UInt32(text) {
                config.socketGroup = gid
            } else if let entry = getgrnam(text) {
                config.socketGroup = entry.pointee.gr_gid
            } else {
                throw Invalid(description: "--socket-group: no group named '\(text.prefix(32))'")
            }
        }
        if let text = setting(port, "PORT") {
            guard let p = UInt16(text) else { throw Invalid(description: "--port must be within 0...65535, not '\(text.prefix(32))'") }
            config.udpPort = p
        }
        let peerList = peers.isEmpty ? (env["LOCKSTEP_PEER"] ?? "").split(separator: ",").map(String.init) : peers
        config.staticPeers = peerList.map { $0.trimmed() }.filter { !$0.isEmpty }
        config.mdns = !(noMDNS || ["1", "true", "yes"].contains(env["LOCKSTEP_NO_MDNS"]?.lowercased() ?? ""))
        if let s = try seconds(setting(peerTimeout, "PEER_TIMEOUT"), "--peer-timeout", within: Ranges.peerTimeoutSeconds) {
            config.peerTimeout = TimeSpan(seconds: s)
        }
        if let text = setting(fullMeshUpTo, "FULL_MESH_UP_TO") {
            guard let n = Int(text), Ranges.fullMeshPeers.contains(n) else {
                throw Invalid(description: "--full-mesh-up-to must be a number of peers within \(Ranges.fullMeshPeers.lowerBound)...\(Ranges.fullMeshPeers.upperBound), not '\(text.prefix(32))'")
            }
            config.fullMeshUpTo = n
        }
        if let text = setting(waitingReasons, "WAITING_REASONS") {
            let reasons = text.split(separator: ",").map { $0.trimmed() }.filter { !$0.isEmpty }
            if let long = reasons.first(where: { !PlayerLimits.reasonBytes.contains($0.utf8.count) }) {
                throw Invalid(description: "--waiting-reasons: a reason is 1...32 bytes, not '\(long.prefix(40))'")
            }
            config.waitingReasons = Set(reasons)
        }
        if let s = try seconds(setting(waitTimeout, "WAIT_TIMEOUT"), "--wait-timeout", within: Ranges.waitTimeoutSeconds) {
            config.waitTimeout = TimeSpan(seconds: s)
        }
        let offset = try seconds(setting(simClockOffset, "SIM_CLOCK_OFFSET"), "--sim-clock-offset", within: Ranges.simClockOffsetSeconds) ?? 0
        var skew = 0.0
        if let text = setting(simClockSkew, "SIM_CLOCK_SKEW") {
            guard let ppm = Double(text), Ranges.simClockSkewPPM.contains(ppm) else {
                throw Invalid(description: "--sim-clock-skew must be ppm within \(Ranges.simClockSkewPPM.lowerBound)...\(Ranges.simClockSkewPPM.upperBound), not '\(text.prefix(32))'")
            }
            skew = ppm
        }
        // Epoch 0: the simulated clock is a fixed function of host time, so a benchmark can compute
        // the true offset between two agents from their flags alone.
        config.deviceClock = DeviceClock(offsetNs: TimeSpan(seconds: offset).ns, skewPPM: skew, epochNs: 0)
        do {
            if let spec = setting(impair, "IMPAIR") { config.impairments.all = try .init(parsing: spec) }
            for entry in impairTo {
                let parts = entry.split(separator: "=", maxSplits: 1)
                guard parts.count == 2 else { throw Invalid(description: "--impair-to takes ADDRESS=SPEC") }
                config.impairments.perDestination[String(parts[0])] = try .init(parsing: String(parts[1]))
            }
        } catch let e as Invalid {
            throw e
        } catch {
            throw Invalid(description: "\(error)")
        }
        config.testHooks = testHooks || !config.deviceClock.isIdentity || !config.impairments.isNone
        return (config, level)
    }
}
