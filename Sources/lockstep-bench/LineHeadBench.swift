import ArgumentParser
import LockstepLab
import LockstepPlayerProtocol

/// `lockstep-bench line-head`: what reading a line's routing fields costs each side of the player
/// socket. The agent reads a request's `type` and `request_id`, the SDK an event's `event` or a
/// reply's `request_id`, before the line is decoded whole; with `JSONDecoder` that was a second
/// parse of every line. Compares that parse with ``JSONLineHead``'s scan, beside the whole decode,
/// on lines as the agent and the SDK write them. No lab, no root.
struct LineHeadBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "line-head",
        abstract: "CPU cost of reading a player-socket line's routing fields: JSONDecoder against the one-pass scan.")

    @Flag(help: "Print one JSON object instead of a table.")
    var json = false

    @Option(help: "Timed reads per line and method (100…1,000,000).")
    var reads = 20_000

    func validate() throws {
        guard (100...1_000_000).contains(reads) else { throw ValidationError("--reads must be within 100…1,000,000") }
    }

    func run() throws {
        var report = Report(benchmark: "line-head")
        report.parameters = ["reads": String(reads)]
        let order = "line,bytes,decoder p50 us,scan p50 us,decoder p99 us,scan p99 us,whole decode p50 us"
        var rows: [[String: String]] = []
        let origin = Origin(peerID: "0aef25064c223c9f9b2b35f9dafc67d0", name: "living-room", action: .seek, reason: nil, local: false, lamport: 12)
        let timeline = try PlayerJSON.encode(TimelineEvent(
            item: "lockstep://reference/10-minutes", state: .playing, positionNs: 7_000_000_000, rate: 0.99998, hostTimeNs: 1_046_653_683_952, origin: origin))
        let position = try PlayerJSON.encode(PositionLine(type: "position", positionNs: 7_531_493_949, hostTimeNs: 1_047_102_732_816))
        let players = (1...64).map { n in
            ParticipantView(peerID: String(repeating: "ab", count: 16), peerName: "h\(n)", playerID: UInt32(n), name: "player-h\(n)", readiness: .ready, suspensionReasons: [], local: n == 1)
        }
        let participants = try PlayerJSON.encode(ParticipantsEvent(item: "lockstep://reference/10-minutes", participants: players))
        // Each head as its side decoded it before the scan, and as it scans it now.
        let eventHead: ([UInt8]) -> Bool = { (try? PlayerJSON.decode(EventHead.self, from: $0)) != nil }
        let eventScan: ([UInt8]) -> Bool = { JSONLineHead.scan($0, "event", "request_id") != nil }
        let lines: [(name: String, bytes: [UInt8], decoded: ([UInt8]) -> Bool, scanned: ([UInt8]) -> Bool, whole: ([UInt8]) -> Bool)] = [
            ("timeline event (to a player)", timeline, eventHead, eventScan, { (try? PlayerJSON.decode(TimelineEvent.self, from: $0)) != nil }),
            ("position report (from a player)", position, { (try? PlayerJSON.decode(RequestHeader.self, from: $0)) != nil }, { RequestHeader(scanning: $0) != nil },
             { (try? PlayerJSON.decode(PositionReport.self, from: $0)) != nil }),
            ("participants event, 64 players", participants, eventHead, eventScan, { (try? PlayerJSON.decode(ParticipantsEvent.self, from: $0)) != nil }),
        ]
        for line in lines {
            guard line.scanned(line.bytes) else { throw ValidationError("the scan gave up on the \(line.name)") }
            guard line.decoded(line.bytes), line.whole(line.bytes) else { throw ValidationError("the \(line.name) does not decode") }
            let decoder = Self.time(reads) { line.decoded(line.bytes) }
            let scan = Self.time(reads) { line.scanned(line.bytes) }
            let whole = Self.time(reads) { line.whole(line.bytes) }
            rows.append([
                "_order": order, "line": line.name, "bytes": String(line.bytes.count),
                "decoder p50 us": fmt(decoder.median, 2), "scan p50 us": fmt(scan.median, 2),
                "decoder p99 us": fmt(decoder.percentile(99), 2), "scan p99 us": fmt(scan.percentile(99), 2),
                "whole decode p50 us": fmt(whole.median, 2),
            ])
            let key = line.name.split(separator: " ").first.map(String.init) ?? line.name
            report.figures["\(key)_decoder_p50_us"] = decoder.median
            report.figures["\(key)_scan_p50_us"] = scan.median
            report.figures["\(key)_whole_decode_p50_us"] = whole.median
        }
        report.tables["cost per line (one thread, release build, warm caches)"] = rows
        report.notes.append("decoder: JSONDecoder reading only the two routing fields, as the agent (RequestHeader) and the SDK did before the scan (it parses the whole line all the same); scan: as each side reads them now; whole decode: the line's own type, which follows either way")
        report.print(json: json)
    }

    /// Microseconds per call of `body`, after a warm-up.
    static func time(_ n: Int, _ body: () -> Bool) -> Stats {
        for _ in 0..<100 { _ = body() }
        var costs: [Double] = []
        costs.reserveCapacity(n)
        for _ in 0..<n {
            let start = MonotonicClock.read()
            let ok = body()
            costs.append(Double(MonotonicClock.read() - start) / 1_000)
            precondition(ok)
        }
        return Stats(costs)
    }

    /// The fields the SDK routes an event or a reply by, decoded as it did before the scan
    /// (its own type is private to it; the agent's is ``RequestHeader``).
    struct EventHead: Decodable {
        var event: String?
        var requestID: RequestID?
        enum CodingKeys: String, CodingKey {
            case event
            case requestID = "request_id"
        }
    }

    /// A position report as the SDK writes it (the request's fields and its `type`).
    struct PositionLine: Encodable {
        var type: String
        var positionNs: Int64
        var hostTimeNs: Int64
        enum CodingKeys: String, CodingKey {
            case type
            case positionNs = "position_ns"
            case hostTimeNs = "host_time_ns"
        }
    }
}
