/// mpv's answer to one request.
public struct MPVReply: Sendable, Equatable {
    public let requestID: Int64
    /// mpv's `error` field: `"success"`, or why the command failed (`"property unavailable"`…).
    public let error: String
    /// mpv's `data` field (``MPVValue/null`` if it sent none).
    public let data: MPVValue
    /// Host time (ns) just before the request was written to the socket.
    public let sentAt: Int64
    /// Host time (ns) when the bytes holding the reply were read from the socket.
    public let receivedAt: Int64

    public init(requestID: Int64, error: String, data: MPVValue, sentAt: Int64, receivedAt: Int64) {
        self.requestID = requestID
        self.error = error
        self.data = data
        self.sentAt = sentAt
        self.receivedAt = receivedAt
    }

    public var succeeded: Bool { error == "success" }
    /// `receivedAt − sentAt`: mpv evaluated the request somewhere in between.
    public var roundTrip: Int64 { receivedAt - sentAt }
    /// The middle of the round trip: the best guess of when mpv evaluated the request.
    public var midpoint: Int64 { sentAt + (receivedAt - sentAt) / 2 }
}
