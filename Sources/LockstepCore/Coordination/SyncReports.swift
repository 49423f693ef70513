/// Who is told how far this agent's players are from the group's timeline, and what other
/// agents said of theirs (`sync_report`, see ``SyncReport``).
///
/// Demand-driven so that an idle group pays nothing: while this agent's own clients watch sync
/// errors (``onWanted(_:now:)``), it sends every reachable peer a report that asks for theirs;
/// a peer answers, about once a second, only while such requests keep coming (each counts for
/// ``Configuration/requestLifetime``). A pure instance: inputs with the current time, sends as
/// directives, one deadline.
public struct SyncReports: Sendable {
    public struct Configuration: Sendable {
        /// How often reports go out while someone wants them.
        public var interval: TimeSpan = .seconds(1)
        /// How long one request keeps this agent reporting to its sender.
        public var requestLifetime: TimeSpan = .seconds(3)
        /// How long a received error counts as current.
        public var freshness: TimeSpan = .seconds(3)

        public init() {}
    }

    public enum Directive: Sendable, Equatable {
        case send(SyncReport, to: PeerID)
    }

    /// A peer's players' errors as last reported.
    public struct Received: Sendable, Equatable {
        public var errors: [UInt32: TimeSpan]
        public var at: LocalTime
    }

    public let configuration: Configuration
    /// This agent's clients watch sync errors.
    public private(set) var wanted = false
    private var received: [PeerID: Received] = [:]
    /// When each peer last asked for reports.
    private var askedAt: [PeerID: LocalTime] = [:]
    private var nextDue: LocalTime?

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    /// Whether this agent's clients watch sync errors. Turning it on reports (and asks) at once.
    public mutating func onWanted(_ wanted: Bool, now: LocalTime) {
        guard wanted != self.wanted else { return }
        self.wanted = wanted
        if wanted { nextDue = now }
    }

    /// `peer` sent a report (from a member: the node checks).
    public mutating func onReport(_ report: SyncReport, from peer: PeerID, now: LocalTime) {
        received[peer] = Received(errors: Dictionary(report.entries.map { ($0.playerID, $0.error) }, uniquingKeysWith: { a, _ in a }), at: now)
        guard report.wantsReports else { return }
        let isNew = askedAt[peer].map { now - $0 > configuration.requestLifetime } ?? true
        askedAt[peer] = now
        // A new watcher gets an answer at once, not at the next round.
        if isNew { nextDue = min(nextDue ?? now, now) }
    }

    /// `peer` restarted, was lost or forgotten: what it said no longer holds.
    public mutating func onPeerGone(_ peer: PeerID) {
        received[peer] = nil
        askedAt[peer] = nil
    }

    /// Reports due now: to every reachable peer while wanted (asking for theirs), else to the
    /// peers that asked recently, when this agent has players with current errors (`local`).
    public mutating func onTick(now: LocalTime, reachable: [PeerID], local: [SyncReport.Entry]) -> [Directive] {
        guard let due = nextDue, now >= due else { return [] }
        askedAt = askedAt.filter { now - $0.value <= configuration.requestLifetime }
        let report = SyncReport(wantsReports: wanted, entries: local)
        let recipients: [PeerID]
        if wanted {
            recipients = reachable
        } else if !local.isEmpty {
            recipients = reachable.filter { askedAt[$0] != nil }
        } else {
            recipients = []
        }
        nextDue = wanted || !askedAt.isEmpty ? now + configuration.interval : nil
        return recipients.sorted().map { .send(report, to: $0) }
    }

    /// When ``onTick(now:reachable:local:)`` next has work.
    public func nextDeadline(now: LocalTime) -> LocalTime {
        nextDue ?? .distantFuture
    }

    /// `peer`'s players' errors, when reported within ``Configuration/freshness``.
    public func errors(of peer: PeerID, now: LocalTime) -> [UInt32: TimeSpan] {
        guard let r = received[peer], now - r.at <= configuration.freshness else { return [:] }
        return r.errors
    }
}
