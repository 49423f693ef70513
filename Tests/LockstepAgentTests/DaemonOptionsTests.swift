import LockstepCore
import Testing

@testable import LockstepAgent

/// `lockstepd`'s options and environment variables become a configuration, every number checked.
@Suite("lockstepd options")
struct DaemonOptionsTests {
    static let env = ["LOCKSTEP_SOCKET": "/tmp/x.sock", "LOCKSTEP_STATE_DIR": "/tmp/x-state"]

    static func refusal(_ options: DaemonOptions, _ env: [String: String] = env) -> String? {
        do {
            _ = try options.configuration(environment: env)
            return nil
        } catch {
            return error.description
        }
    }

    @Test("a flag wins over its variable; variables fill what flags leave")
    func precedence() throws {
        var o = DaemonOptions()
        o.name = "den"
        var env = Self.env
        env["LOCKSTEP_NAME"] = "kitchen"
        env["LOCKSTEP_PEER_TIMEOUT"] = "1.5"
        env["LOCKSTEP_FULL_MESH_UP_TO"] = "20"
        env["LOCKSTEP_PEER"] = "10.0.0.2:4000, 10.0.0.3:4000"
        let (config, level) = try o.configuration(environment: env)
        #expect(config.name == "den")
        #expect(config.peerTimeout == .milliseconds(1_500))
        #expect(config.fullMeshUpTo == 20)
        #expect(config.staticPeers == ["10.0.0.2:4000", "10.0.0.3:4000"])
        #expect(config.socketPath == "/tmp/x.sock" && config.stateDirectory == "/tmp/x-state")
        #expect(level == .info)
    }

    @Test("out-of-range numbers are refused, naming the option and its range", arguments: [
        ("peerTimeout", "1e300"), ("peerTimeout", "0"), ("waitTimeout", "-1"), ("simClockOffset", "1e18"), ("simClockSkew", "5000"), ("port", "70000"),
        ("fullMeshUpTo", "65"), ("fullMeshUpTo", "-1"), ("fullMeshUpTo", "9e99"),
    ])
    func ranges(_ field: String, _ value: String) {
        var o = DaemonOptions()
        switch field {
        case "peerTimeout": o.peerTimeout = value
        case "waitTimeout": o.waitTimeout = value
        case "simClockOffset": o.simClockOffset = value
        case "simClockSkew": o.simClockSkew = value
        case "fullMeshUpTo": o.fullMeshUpTo = value
        default: o.port = value
        }
        let message = Self.refusal(o)
        #expect(message?.contains("within") == true, "\(field)=\(value): \(message ?? "accepted")")
    }

    @Test("a simulated clock or an impairment turns the test hooks on; nothing else does")
    func testHooks() throws {
        #expect(try DaemonOptions().configuration(environment: Self.env).0.testHooks == false)
        var o = DaemonOptions()
        o.simClockSkew = "100"
        let (config, _) = try o.configuration(environment: Self.env)
        #expect(config.testHooks && config.deviceClock.skewPPM == 100)
        var i = DaemonOptions()
        i.impair = "delay=5ms"
        #expect(try i.configuration(environment: Self.env).0.testHooks)
    }

    @Test("an unknown log level and a bad impairment are refused with a reason")
    func words() {
        var o = DaemonOptions()
        o.logLevel = "loud"
        #expect(Self.refusal(o)?.contains("unknown log level") == true)
        var i = DaemonOptions()
        i.impair = "delay=soon"
        #expect(Self.refusal(i) != nil)
    }
}
