/// How far the sender's players are from the group's timeline (`sync_report`): measurements for
/// dashboards and watchers on other agents, never an input to the merge or to corrections.
///
/// Sent only on demand: an agent whose own clients watch the players' sync errors sets
/// ``wantsReports`` on its reports (with no entries when it has no players of its own), and a
/// peer that heard such a request recently answers with its players' errors about once a second
/// (``SyncReports``). An idle group sends none.
public struct SyncReport: Equatable, Sendable, Codable {
    /// One local player's error: its reported position minus the timeline's position at the
    /// moment it reported (positive: ahead).
    public struct Entry: Equatable, Sendable, Codable {
        /// The player's id on the sender (as in its participant record).
        public var playerID: UInt32
        public var error: TimeSpan

        public init(playerID: UInt32, error: TimeSpan) {
            self.playerID = playerID
            self.error = error
        }

        enum CodingKeys: String, CodingKey {
            case playerID = "player_id"
            case error
        }
    }

    /// At most as many entries as a participant record has players.
    public static let maxEntries = ParticipantRecord.maxPlayers

    /// The sender's clients watch sync errors: the receiver should send its own reports.
    public var wantsReports: Bool
    public var entries: [Entry]

    /// Entries sorted by player (the wire's canonical order), at most ``maxEntries``.
    public init(wantsReports: Bool, entries: [Entry]) {
        self.wantsReports = wantsReports
        self.entries = Array(entries.sorted { $0.playerID < $1.playerID }.prefix(Self.maxEntries))
    }

    enum CodingKeys: String, CodingKey {
        case wantsReports = "wants_reports"
        case entries
    }
}
