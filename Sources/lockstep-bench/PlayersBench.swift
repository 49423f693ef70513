import ArgumentParser
import Foundation
import LockstepCore
import LockstepLab
import LockstepPlayerProtocol

/// Reference players on lab hosts with simulated clocks: how close together they start, seek and
/// stay, and how long from a user's intent to the synchronized start.
struct PlayersBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "players", abstract: "Start, seek and steady-state spread of reference players on lab hosts with simulated clocks, and intent-to-start latency.")

    @OptionGroup var options: BenchOptions
    @Option(help: "Hosts.") var hosts = 8
    @Option(help: "Plays (each after a pause).") var plays = 50
    @Option(help: "Seeks while playing.") var seeks = 20
    @Option(help: "Steady-state playback, seconds.") var steady = 300.0
    @Option(help: "Largest simulated clock offset, seconds (±).") var maxOffset = 30.0
    @Option(help: "Largest simulated clock skew, ppm (±).") var maxSkew = 200.0
    @Option(help: "Largest media clock drift of the players, ppm (±).") var maxDrift = 50.0
    @Option(help: "Seed.") var seed: UInt64 = 7

    func run() async throws {
        try options.check()
        var rng = SplitMix64(seed: seed)
        var report = Report(benchmark: "players")
        let lab = try Lab(hosts: hosts, name: "bp")
        defer { lab.destroy() }
        var clocks: [String] = []
        for h in 1...hosts {
            let offset = Double.random(in: -maxOffset...maxOffset, using: &rng)
            let skew = Double.random(in: -maxSkew...maxSkew, using: &rng)
            clocks.append("h\(h): \(fmt(offset, 3)) s, \(fmt(skew, 1)) ppm")
            try lab.startAgent(h, flags: ["--sim-clock-offset", String(offset), "--sim-clock-skew", String(skew)])
        }
        options.progress("waiting for \(hosts) agents to find each other")
        _ = try await waitUntil(timeout: 30) {
            for h in 1...hosts {
                let p: PeersResult = try await lab.request(h, "peers")
                if p.peers.filter({ $0.state == "reachable" }).count < hosts - 1 { return false }
            }
            return true
        }
        try await Task.sleep(nanoseconds: 3_000_000_000)
        let refplayer = Lab.binDirectory + "/lockstep-refplayer"
        var drifts: [String] = []
        for h in 1...hosts {
            let drift = Double.random(in: -maxDrift...maxDrift, using: &rng)
            drifts.append("h\(h): \(fmt(drift, 1)) ppm")
            try lab.spawn(h, "ref", [refplayer, "--socket", lab.socket(h), "--name", "ref\(h)", "--drift-ppm", String(drift), "--seed", String(h), "--log", lab.hostDirectory(h) + "/ref.jsonl"])
        }
        report.parameters = [
            "hosts": String(hosts), "plays": String(plays), "seeks": String(seeks), "steady_s": fmt(steady, 0),
            "agent_clocks": clocks.joined(separator: "; "), "player_drifts": drifts.joined(separator: "; "),
            "player_model": "reference player: start latency 20 ms, start/seek jitter ±100 µs, position reports every 100 ms",
            "measure": "true positions reconstructed from each player's log; spread = max − min across hosts at one host instant (all namespaces share CLOCK_MONOTONIC)",
        ]
        options.progress("waiting for the players to be ready")
        _ = try await waitUntil(timeout: 30) {
            let p: PlayersResult = try await lab.request(1, "players")
            return p.players.filter { $0.participant.readiness == .ready }.count == hosts
        }
        let control = try await PersistentClient(socketPath: lab.socket(1))
        func command(_ r: CommandRequest) async throws -> GroupStateView { try await control.request("command", r) }

        // Plays: pause, then play; the start instant is the anchor of the play.
        var playMarks: [(sent: Int64, anchor: Int64)] = []
        for i in 0..<plays {
            if i % 10 == 0 { options.progress("play \(i + 1)/\(plays)") }
            _ = try await command(.init(action: .pause))
            try await Task.sleep(nanoseconds: 300_000_000)
            let sent = MonotonicClock.read()
            let state = try await command(.init(action: .play))
            if let anchor = state.item?.hostTimeNs { playMarks.append((sent, anchor)) }
            try await Task.sleep(nanoseconds: 700_000_000)
        }
        var seekMarks: [Int64] = []
        for i in 0..<seeks {
            if i % 10 == 0 { options.progress("seek \(i + 1)/\(seeks)") }
            let state = try await command(.init(action: .seek, positionNs: Int64(i + 1) * 7_000_000_000))
            if let anchor = state.item?.hostTimeNs { seekMarks.append(anchor) }
            try await Task.sleep(nanoseconds: 1_000_000_000)
        }
        options.progress("steady playback for \(fmt(steady, 0)) s")
        let steadyFrom = MonotonicClock.read() + 2_000_000_000
        try await Task.sleep(nanoseconds: UInt64((steady + 2) * 1e9))
        let steadyTo = MonotonicClock.read()
        control.close()
        for h in 1...hosts { try? lab.kill(h, "ref") }

        let traces = try (1...hosts).map { try PlayerTrace(name: "h\($0)", path: lab.hostDirectory($0) + "/ref.jsonl") }
        // Starts: spread 50 ms after the anchor (every player has started; no correction yet).
        let startSpread = Stats(playMarks.compactMap { positionSpread(traces, at: $0.anchor + 50_000_000) }.map { Double($0) / 1e3 })
        let seekSpread = Stats(seekMarks.compactMap { positionSpread(traces, at: $0 + 50_000_000) }.map { Double($0) / 1e3 })
        var steadySamples: [Double] = []
        var t = steadyFrom
        while t < steadyTo {
            if let s = positionSpread(traces, at: t) { steadySamples.append(Double(s) / 1e3) }
            t += 100_000_000
        }
        let steadySpread = Stats(steadySamples)
        // Intent to start: from the command leaving the bench to the earliest true start.
        let latency = Stats(playMarks.compactMap { mark -> Double? in
            let starts = traces.compactMap { $0.segments(from: mark.sent, to: mark.sent + 2_000_000_000).first(where: { $0.rate > 0 })?.from }
            return starts.count == hosts ? Double(starts.max()! - mark.sent) / 1e6 : nil
        })
        func row(_ name: String, _ s: Stats, _ unit: String) -> [String: String] {
            ["_order": "measure,samples,p50,p99,max,unit", "measure": name, "samples": String(s.count), "p50": fmt(s.median, 1), "p99": fmt(s.percentile(99), 1), "max": fmt(s.max, 1), "unit": unit]
        }
        report.tables["reference players on \(hosts) lab hosts"] = [
            row("start spread after play", startSpread, "µs"), row("spread after seek", seekSpread, "µs"),
            row("steady-state spread (every 100 ms)", steadySpread, "µs"), row("intent to synchronized start", latency, "ms"),
        ]
        report.figures["start_spread_p99_us"] = startSpread.percentile(99)
        report.figures["seek_spread_p99_us"] = seekSpread.percentile(99)
        report.figures["steady_spread_p99_us"] = steadySpread.percentile(99)
        report.figures["intent_to_start_p50_ms"] = latency.median
        report.goal("start spread", target: "p99 ≤ 1 ms", measured: "p99 \(fmt(startSpread.percentile(99), 1)) µs", met: startSpread.percentile(99) <= 1000 && startSpread.count >= plays * 9 / 10)
        report.goal("steady-state spread", target: "p99 ≤ 1 ms", measured: "p99 \(fmt(steadySpread.percentile(99), 1)) µs", met: steadySpread.percentile(99) <= 1000)
        report.goal("intent to start", target: "≤ 150 ms", measured: "p50 \(fmt(latency.median, 1)) ms, max \(fmt(latency.max, 1)) ms", met: latency.max <= 150)
        report.print(json: options.json)
    }
}

