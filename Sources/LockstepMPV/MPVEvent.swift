/// A line from mpv that is not a reply: `{"event":"property-change","id":1,"name":"pause","data":true}`.
public struct MPVEvent: Sendable, Equatable {
    /// The `event` field: `property-change`, `seek`, `playback-restart`, `file-loaded`,
    /// `start-file`, `end-file`, `idle`, `shutdown`, `client-message`…
    public let name: String
    /// Host time (ns) when the bytes holding this line were read from the socket.
    public let receivedAt: Int64
    /// Every field of the line (including `event`).
    public let fields: [String: MPVValue]

    public init(name: String, receivedAt: Int64, fields: [String: MPVValue]) {
        self.name = name
        self.receivedAt = receivedAt
        self.fields = fields
    }

    /// The property of a `property-change` event.
    public var propertyName: String? { name == "property-change" ? fields["name"]?.string : nil }
    /// The `data` field: a `property-change` event's new value (absent if the property is unavailable).
    public var data: MPVValue? { fields["data"] }
    /// The observer id of a `property-change` event.
    public var observerID: Int64? { fields["id"]?.int }
    /// The `reason` of an `end-file` event: `eof`, `stop`, `quit`, `error`, `redirect`.
    public var reason: String? { fields["reason"]?.string }
}
