import ArgumentParser
import Foundation
import LockstepCore
import LockstepLab
import LockstepMPV

/// `tools/bench mpv`: real mpv players on three lab hosts kept in step by a sync system
/// (Lockstep's `lockstep mpv`, and Syncplay in the same run), measured by a position probe that is first proved on
/// players put a known distance apart.
struct MpvBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mpv",
        abstract: "mpv on 3 hosts kept in step by Lockstep and by Syncplay: position spread, reaction latency, stall recovery, side by side.",
        discussion: """
            First proves the position probe: two local mpv are put known distances apart (exact \
            seeks, resumes at known host instants) and the probe must find those distances. Then, \
            per system, three lab hosts each run a headless mpv on the same generated media; a \
            user on one host plays, pauses and seeks through that host's mpv IPC; the probe reads \
            every mpv's audio-pts 100 times a second. Takes about 3 minutes per system.
            """)

    @OptionGroup var options: BenchOptions

    @Option(help: "Sync systems to measure, comma-separated (available: lockstep, syncplay, gstreamer: h2 runs the Python SDK's GStreamer player beside two lockstep mpv).")
    var systems = "lockstep,syncplay"

    @Option(help: "Media: video (25 fps test picture with a tone) or tone (Opus tone).")
    var media = "video"

    @Option(help: "Runs per system (a fresh lab each; results pooled).")
    var runs = 1

    @Option(help: "Pause/play/seek cycles per run.")
    var cycles = 4

    @Option(help: "Seconds of steady playback.")
    var steady = 60.0

    @Option(help: "Seconds one mpv is stopped (SIGSTOP) for.")
    var stall = 1.0

    @Option(help: "Probe check trials (0 skips the check).")
    var probeTrials = 8

    @Option(help: "Write every reading and command as CSV files into this directory.")
    var dump: String?

    func run() async throws {
        try options.check()
        var report = Report(benchmark: "mpv")
        options.progress("making test media (cached under \(TestMedia.cacheDirectory))")
        let file = media == "tone" ? try TestMedia.tone() : try TestMedia.video()
        let script = MpvScript(cycles: cycles, steady: steady, stall: stall)
        report.parameters = [
            "mpv": Self.mpvVersion(),
            "media": (file as NSString).lastPathComponent,
            "hosts": "3 lab hosts (network namespaces), one headless mpv each (--vo=null --ao=null)",
            "runs": "\(runs) per system, pooled",
            "probe": "audio-pts via get_property every 10 ms per player; readings with round trip > 2 ms dropped; position at common instants from local line fits",
            "script": "h1 plays; \(cycles) cycles of pause (3 s) / play (5 s) / absolute seek (6 s), rotating hosts; \(Int(steady)) s steady; h2's mpv SIGSTOPped \(stall) s, watched \(Int(script.watch)) s",
            "spread": "max − min of the 3 positions every 10 ms, from \(script.settle) s after a command to the next",
            "reaction": "command written to the user's mpv → another mpv starts moving / stops / jumps (from its track)",
            "stall recovery": "from SIGCONT until within \(Int(script.recoveredWithin * 1000)) ms of the others' median for \(Int(script.recoveredFor)) s",
        ]

        if probeTrials > 0 {
            try await probeCheck(file, into: &report)
        }

        var results: [(String, MpvResult)] = []
        for name in systems.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            let system: any MpvSyncSystem
            switch name {
            case "lockstep": system = LockstepMpvSystem()
            case "syncplay": system = SyncplaySystem()
            case "gstreamer": system = LockstepMpvSystem(gstreamer: [2], reference: [3])
            default: throw ValidationError("unknown system \(name) (available: lockstep, syncplay, gstreamer)")
            }
            for (k, v) in system.configuration { report.parameters[k] = v }
            var pooled = MpvResult()
            for run in 1...max(runs, 1) {
                let tag = runs > 1 ? "\(name) run \(run)/\(runs)" : name
                options.progress("\(tag): building a 3-host lab")
                let lab = try Lab(hosts: 3, avahi: system.needsAvahi, name: "mpv")
                defer { lab.destroy() }
                let progress = options.progress
                let recording = try await MpvScenarios.record(
                    system: system, lab: lab, hosts: [1, 2, 3], media: file, script: script,
                    progress: { progress("\(tag): \($0)") })
                if let dump { try MpvScenarios.dump(recording, to: dump + "/" + name + (runs > 1 ? "-\(run)" : "")) }
                let result = MpvScenarios.analyse(recording, script: script)
                if run == 1 { pooled = result } else { pooled.merge(result) }
                lab.destroy()
            }
            results.append((name, pooled))
        }
        Self.tabulate(results, into: &report)
        Self.goals(results, into: &report)
        report.notes.append("""
            Reference, measured earlier on these machines (Syncplay, 3 headless mpv): steady spread \
            p50 60 / p95 130 / max 164 ms; starts and seeks left 30-165 ms offsets never corrected \
            (Syncplay acts only above 1.5 s); others reacted to an unpause in 150 ms (median), a seek \
            in 95 ms, a pause in 290 ms; a 1 s stall stayed 1 s behind for good; a stall of 1.5 s or \
            more rewound the whole room.
            """)
        report.print(json: options.json)
    }

    // MARK: The probe's proof

    private func probeCheck(_ file: String, into report: inout Report) async throws {
        options.progress("probe check: two local mpv, \(probeTrials) trials with known offsets")
        let dir = "/tmp/lockstep-bench-mpv-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var oa = MPVOptions(socketPath: dir + "/a.sock", media: file), ob = MPVOptions(socketPath: dir + "/b.sock", media: file)
        oa.paused = true
        ob.paused = true
        let a = try await MPVProcess.launch(oa), b = try await MPVProcess.launch(ob)
        let ca = try await a.connect(), cb = try await b.connect()
        // (position offset, time offset): seeks apart, resumes apart, both, and none.
        let plan: [(Double, Double)] = [(0.037, 0), (0, 0.037), (-0.037, 0), (0, -0.037), (0, 0), (0.0013, 0), (0.020, 0.057), (0.250, 0)]
        var rows: [[String: String]] = [], errors: [Double] = [], stepErrors: [Double] = []
        for k in 0..<probeTrials {
            let (dp, dt) = plan[k % plan.count]
            let position = 30.0 + Double(k) * 40
            let trial: ProbeCheck.Trial
            do {
                trial = try await ProbeCheck.trial(ca, cb, at: position, positionOffset: dp, timeOffset: dt)
            } catch {
                await a.terminate()
                await b.terminate()
                throw error
            }
            let e = trial.errors["audio-pts"], se = trial.errors["time-pos"]
            if let e { errors.append(e) }
            if let se { stepErrors.append(se) }
            var made: [String] = []
            if dp != 0 { made.append(String(format: "seek B %+.1f ms", dp * 1000)) }
            if dt != 0 { made.append(String(format: "resume B %+.1f ms later", dt * 1000)) }
            rows.append([
                "_order": "at s,made by,truth B-A ms,audio-pts ms,error ms,time-pos steps ms,error (steps) ms",
                "at s": String(format: "%.0f", position),
                "made by": made.isEmpty ? "both resumed together" : made.joined(separator: ", "),
                "truth B-A ms": fmt(trial.truth * 1000),
                "audio-pts ms": trial.measured["audio-pts"].map { fmt($0 * 1000) } ?? "-",
                "error ms": e.map { fmt($0 * 1000) } ?? "-",
                "time-pos steps ms": trial.measured["time-pos"].map { fmt($0 * 1000) } ?? "-",
                "error (steps) ms": se.map { fmt($0 * 1000) } ?? "-",
            ])
        }
        await a.terminate()
        await b.terminate()
        report.tables["probe check: two players put a known distance apart"] = rows
        let worst = errors.map(abs).max() ?? .nan, rms = (errors.map { $0 * $0 }.reduce(0, +) / Double(max(errors.count, 1))).squareRoot()
        let worstSteps = stepErrors.map(abs).max() ?? .nan
        setFigure(&report, "probe_error_max_ms", worst * 1000)
        setFigure(&report, "probe_error_rms_ms", rms * 1000)
        setFigure(&report, "probe_steps_error_max_ms", worstSteps * 1000)
        report.goal("probe (audio-pts) recovers known offsets", target: "|error| < 1 ms in every trial",
                    measured: "max \(fmt(worst * 1000)) ms, rms \(fmt(rms * 1000)) ms over \(errors.count) trials",
                    met: errors.count == probeTrials && worst < 0.001)
    }

    // MARK: Tables

    private static func tabulate(_ results: [(String, MpvResult)], into report: inout Report) {
        let names = results.map(\.0)
        let ratioName = names.count == 2 ? "\(names[1])/\(names[0])" : nil
        func row(_ first: [(String, String)], _ values: [Double?], unit: Double = 1000, digits: Int = 1) -> [String: String] {
            var r: [String: String] = [:]
            var order = first.map(\.0)
            for (k, v) in first { r[k] = v }
            for (name, v) in zip(names, values) {
                r[name] = v.map { fmt($0 * unit, digits) } ?? "-"
                order.append(name)
            }
            if let ratioName {
                order.append(ratioName)
                if let x = values[0], let y = values[1], x != 0 { r[ratioName] = fmt(y / x, 2) } else { r[ratioName] = "-" }
            }
            r["_order"] = order.joined(separator: ",")
            return r
        }

        var spreadRows: [[String: String]] = []
        for scenario in MpvScenarios.names {
            let stats = results.map { Stats($0.1.spreads[scenario] ?? []) }
            for (label, p) in [("p50", 50.0), ("p95", 95.0), ("max", 100.0)] {
                let values: [Double?] = stats.map { $0.count == 0 ? nil : $0.percentile(p) }
                spreadRows.append(row([("scenario", scenario), ("stat", label)], values))
                for (name, v) in zip(names, values) {
                    if let v { setFigure(&report, "\(name)_spread_\(scenario.replacingOccurrences(of: " ", with: "_"))_\(label)_ms", v * 1000) }
                }
            }
        }
        report.tables["position spread across the 3 hosts (ms)"] = spreadRows

        // Which player is off: |a − b| per pair of hosts, p95.
        var pairRows: [[String: String]] = []
        for (name, result) in results {
            let keys = Set(result.pairs.keys.compactMap { $0.split(separator: "|").last.map(String.init) }).sorted()
            for scenario in MpvScenarios.names {
                var row = ["_order": (["system", "scenario"] + keys).joined(separator: ","), "system": name, "scenario": scenario]
                for pair in keys {
                    let stats = Stats(result.pairs["\(scenario)|\(pair)"] ?? [])
                    row[pair] = stats.count == 0 ? "-" : fmt(stats.percentile(95) * 1000, 2)
                    if stats.count > 0 {
                        setFigure(&report, "\(name)_pair_\(pair.replacingOccurrences(of: "-", with: "_"))_\(scenario.replacingOccurrences(of: " ", with: "_"))_p95_ms", stats.percentile(95) * 1000)
                    }
                }
                pairRows.append(row)
            }
        }
        report.tables["offset between two hosts |a - b|, p95 (ms)"] = pairRows

        // Against the group's timeline (as the GStreamer player was told it, on the lab's one clock).
        var timelineRows: [[String: String]] = []
        for (name, result) in results where !result.timelineErrors.isEmpty {
            let hosts = Set(result.timelineErrors.keys.compactMap { $0.split(separator: "|").last.map(String.init) }).sorted()
            for scenario in MpvScenarios.names {
                var row = ["_order": (["system", "scenario"] + hosts).joined(separator: ","), "system": name, "scenario": scenario]
                for host in hosts {
                    let stats = Stats(result.timelineErrors["\(scenario)|\(host)"] ?? [])
                    row[host] = stats.count == 0 ? "-" : fmt(stats.percentile(95) * 1000, 2)
                    if stats.count > 0 {
                        setFigure(&report, "\(name)_timeline_error_\(host)_\(scenario.replacingOccurrences(of: " ", with: "_"))_p95_ms", stats.percentile(95) * 1000)
                    }
                }
                timelineRows.append(row)
            }
        }
        if !timelineRows.isEmpty { report.tables["error against the group timeline |position - timeline|, p95 (ms)"] = timelineRows }

        var reactionRows: [[String: String]] = []
        for kind in MpvAction.Kind.allCases {
            let stats = results.map { Stats($0.1.reactions[kind] ?? []) }
            for (label, p) in [("median", 50.0), ("p95", 95.0), ("max", 100.0)] {
                let values: [Double?] = stats.map { $0.count == 0 ? nil : $0.percentile(p) }
                reactionRows.append(row([("command", kind.rawValue), ("stat", label)], values))
                for (name, v) in zip(names, values) {
                    if let v { setFigure(&report, "\(name)_reaction_\(kind.rawValue)_\(label)_ms", v * 1000) }
                }
            }
            reactionRows.append(row([("command", kind.rawValue), ("stat", "n (never)")], results.map { _ in nil }).merging(
                Dictionary(uniqueKeysWithValues: results.map { ($0.0, "\(($0.1.reactions[kind] ?? []).count) (\($0.1.missed[kind] ?? 0))") }),
                uniquingKeysWith: { $1 }))
            let own = results.map { Stats($0.1.ownReactions[kind] ?? []) }
            reactionRows.append(row([("command", kind.rawValue), ("stat", "own mpv, median")], own.map { $0.count == 0 ? nil : $0.median }))
        }
        report.tables["reaction latency of the other hosts (ms)"] = reactionRows

        // One value per run, "a / b / c".
        func perRun(_ label: String, _ value: (MpvStall) -> String) -> [String: String] {
            var r = row([("after the stall", label)], results.map { _ in nil })
            for (name, result) in results { r[name] = result.stalls.map(value).joined(separator: " / ") }
            if let ratioName { r[ratioName] = "-" }
            return r
        }
        let ms: (Double?) -> String = { $0.map { fmt($0 * 1000, 1) } ?? "-" }
        let stallRows = [
            perRun("offset 0.5 s after SIGCONT, ms") { ms($0.offsetAfter) },
            perRun("offset at the end of the watch, ms") { ms($0.offsetFinal) },
            perRun("recovery time, s") { $0.recovery.map { fmt($0, 2) } ?? "never" },
            perRun("the others jumped (room rewound)") { $0.othersJumped ? "yes" : "no" },
        ]
        report.tables["one mpv stalled (SIGSTOP) and resumed"] = stallRows
        for (name, r) in results {
            let after = Stats(r.stalls.compactMap(\.offsetAfter)), final = Stats(r.stalls.compactMap(\.offsetFinal))
            if after.count > 0 { setFigure(&report, "\(name)_stall_offset_after_ms", after.median * 1000) }
            if final.count > 0 { setFigure(&report, "\(name)_stall_offset_final_ms", final.median * 1000) }
            let recovered = r.stalls.compactMap(\.recovery)
            if recovered.count == r.stalls.count, !recovered.isEmpty { setFigure(&report, "\(name)_stall_recovery_s", Stats(recovered).max) }
        }

        var probeRows: [[String: String]] = []
        for (name, r) in results {
            let rtt = Stats(r.roundTrips)
            probeRows.append([
                "_order": "system,readings,round trip median ms,round trip p99 ms,kept",
                "system": name, "readings": String(rtt.count),
                "round trip median ms": fmt(rtt.median * 1000), "round trip p99 ms": fmt(rtt.percentile(99) * 1000),
                "kept": String(format: "%.1f%%", r.readingsKept * 100),
            ])
        }
        report.tables["probe during the runs"] = probeRows
    }

    /// Issue 7's goals for Lockstep, and the ratio to each other system.
    private static func goals(_ results: [(String, MpvResult)], into report: inout Report) {
        func p95(_ r: MpvResult, _ scenario: String) -> Double { Stats(r.spreads[scenario] ?? []).percentile(95) }
        let ms: (Double) -> String = { "\(fmt($0 * 1000, 1)) ms" }
        // Issue 18: the GStreamer player (h2) against each mpv (h1, h3); mpv against mpv beside it.
        if let gst = results.first(where: { $0.0 == "gstreamer" })?.1 {
            let fine: (Double) -> String = { "\(fmt($0 * 1000, 2)) ms" }
            func pairs(_ scenario: String, _ keys: [(Int, Int)]) -> Double {
                Stats(keys.flatMap { gst.pairs[MpvResult.pairKey(scenario, $0.0, $0.1)] ?? [] }).percentile(95)
            }
            for (scenario, target) in [("steady", 0.001), ("first second", 0.002)] {
                let own = Stats(gst.timelineErrors["\(scenario)|h2"] ?? []), mpv = Stats(["h1", "h3"].flatMap { gst.timelineErrors["\(scenario)|\($0)"] ?? [] })
                if own.count > 0 {
                    report.goal(
                        "GStreamer against the group timeline, \(scenario == "steady" ? "steady" : "first second of every start"): |error| p95",
                        target: "<= \(fmt(target * 1000, 0)) ms",
                        measured: "\(fine(own.percentile(95))) (the mpvs: \(fine(mpv.percentile(95))))", met: own.percentile(95) <= target)
                }
                let mine = pairs(scenario, [(0, 1), (1, 2)]), mpvs = pairs(scenario, [(0, 2)]), all = p95(gst, scenario)
                let reference = pairs(scenario, [(1, 3)])
                report.goal(
                    "GStreamer against each mpv, \(scenario == "steady" ? "steady" : "first second of every start"): |offset| p95",
                    target: "<= \(fmt(target * 1000, 0)) ms",
                    measured: "\(fine(mine)) (mpv against mpv \(fine(mpvs)); spread of all \(fine(all)))", met: mine <= target)
                if reference.isFinite {
                    report.goal(
                        "GStreamer against the reference player, \(scenario == "steady" ? "steady" : "first second of every start"): |offset| p95",
                        target: "<= \(fmt(target * 1000, 0)) ms", measured: fine(reference), met: reference <= target)
                }
            }
        }
        guard let lockstep = results.first(where: { $0.0 == "lockstep" })?.1 else { return }
        report.goal("steady spread p95", target: "<= 5 ms", measured: ms(p95(lockstep, "steady")), met: p95(lockstep, "steady") <= 0.005)
        let afterCommands = ["start", "resume", "seek"].map { Stats(lockstep.spreads[$0] ?? []).max }.max() ?? .nan
        report.goal("spread after play or seek (from 1.5 s after the command)", target: "<= 20 ms", measured: "max \(ms(afterCommands))", met: afterCommands <= 0.020)
        let start = Stats(lockstep.reactions[.play] ?? [])
        report.goal("intent to synchronized start (other hosts)", target: "<= 150 ms", measured: "median \(ms(start.median)), p95 \(ms(start.percentile(95)))", met: start.percentile(95) <= 0.150)
        let recoveries = lockstep.stalls.map { $0.recovery ?? .infinity }
        let moved = lockstep.stalls.contains { $0.othersJumped }
        report.goal("a stalled mpv back in sync without moving the others", target: "<= 2 s", measured: recoveries.map { $0.isFinite ? "\(fmt($0, 2)) s" : "never" }.joined(separator: ", ") + (moved ? ", others moved" : ""),
                    met: !recoveries.isEmpty && recoveries.allSatisfy { $0 <= 2 } && !moved)
        for (name, other) in results where name != "lockstep" {
            let ratios = MpvScenarios.names.compactMap { s -> Double? in
                let a = p95(lockstep, s), b = p95(other, s)
                return a > 0 && b.isFinite ? b / a : nil
            }
            let worst = ratios.min() ?? .nan
            report.goal("every scenario's p95 spread at least 10x tighter than \(name)", target: ">= 10x", measured: "\(fmt(worst, 1))x in the closest scenario", met: worst >= 10)
        }
    }

    private func setFigure(_ report: inout Report, _ key: String, _ value: Double) {
        Self.setFigure(&report, key, value)
    }

    private static func setFigure(_ report: inout Report, _ key: String, _ value: Double) {
        if value.isFinite { report.figures[key] = value }
    }

    static func mpvVersion() -> String {
        let r = try? Shell.run("mpv", ["--no-config", "--version"])
        let words = r?.stdout.split(separator: "\n").first?.split(separator: " ").prefix(2) ?? []
        return words.count == 2 ? words.joined(separator: " ") : "unknown"
    }
}
