/// What `lockstep doctor` found: one ``Check`` per question, in the order they are asked (each
/// depends on the ones before it: no agent, no peers; no multicast, no discovery). `--json`
/// prints this value.
public struct DoctorReport: Codable, Sendable, Equatable {
    public var checks: [Check]

    public init(checks: [Check]) {
        self.checks = checks
    }

    /// True when no check failed (warnings and skipped checks do not count).
    public var healthy: Bool { !checks.contains { $0.outcome == .failed } }

    /// One question and its answer: what was seen and, when something is wrong, the fix.
    public struct Check: Codable, Sendable, Equatable {
        /// `agent`, `avahi`, `multicast`, `udp_port`, `peers`, `key_epochs`, `clock`, `players`.
        public var id: ID
        public var outcome: Outcome
        /// What was seen, or what is wrong, in one or a few sentences.
        public var finding: String
        /// What to do about it (absent when there is nothing to do).
        public var fix: String?

        public init(_ id: ID, _ outcome: Outcome, _ finding: String, fix: String? = nil) {
            self.id = id
            self.outcome = outcome
            self.finding = finding
            self.fix = fix
        }
    }

    /// The checks, in the order they are made.
    public enum ID: String, Codable, Sendable, CaseIterable {
        case agent, avahi, multicast
        case udpPort = "udp_port"
        case peers
        case keyEpochs = "key_epochs"
        case clock, players

        /// The check's name in the text report.
        public var title: String {
            switch self {
            case .agent: "agent"
            case .avahi: "avahi-daemon"
            case .multicast: "multicast"
            case .udpPort: "udp port"
            case .peers: "peers"
            case .keyEpochs: "key epochs"
            case .clock: "clock"
            case .players: "players"
            }
        }
    }

    public enum Outcome: String, Codable, Sendable {
        case ok, warning, failed, skipped
    }

    enum CodingKeys: String, CodingKey {
        case checks, healthy
    }

    public init(from decoder: any Decoder) throws {
        checks = try decoder.container(keyedBy: CodingKeys.self).decode([Check].self, forKey: .checks)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(checks, forKey: .checks)
        try c.encode(healthy, forKey: .healthy)
    }

    /// One block per check: `ok`/`WARN`/`FAIL`/`skip`, the finding, then the fix indented.
    public func render() -> String {
        checks.map { check in
            let mark =
                switch check.outcome {
                case .ok: "ok  "
                case .warning: "WARN"
                case .failed: "FAIL"
                case .skipped: "skip"
                }
            var text = "\(mark)  \(check.id.title): " + Terminal.escaped(check.finding)
            if let fix = check.fix { text += "\n      fix: " + Terminal.escaped(fix) }
            return text
        }.joined(separator: "\n")
    }

    /// The check of `id`, if it was made.
    public subscript(id: ID) -> Check? { checks.first { $0.id == id } }
}
