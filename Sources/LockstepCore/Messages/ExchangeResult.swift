/// The requester's half of a finished clock exchange, for the replier: its request to
/// `exchange` (whose `t1` as sent it echoes) really left at `t1`, and the reply arrived at `t4`,
/// both on the requester's clock. A `clock_result` on its own (§4.2b of the peer protocol), or
/// carried by the requester's next `interleaved_request` (§4.2c).
public struct ExchangeResult: Sendable, Equatable, Codable {
    public var exchange: UInt32
    public var echo: Int64
    public var t1: PeerTime
    public var t4: PeerTime

    public init(exchange: UInt32, echo: Int64, t1: PeerTime, t4: PeerTime) {
        self.exchange = exchange
        self.echo = echo
        self.t1 = t1
        self.t4 = t4
    }
}
