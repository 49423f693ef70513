/// When a clock reply really left, as the replier's kernel reports it: the reply to `exchange`
/// (whose `t1` it echoes) left at `t3` on the replier's clock. A `clock_follow_up` on its own
/// (§4.2a of the peer protocol), or carried by the replier's next `interleaved_reply` (§4.2c).
public struct ClockFollowUp: Sendable, Equatable, Codable {
    public var exchange: UInt32
    public var echo: Int64
    public var t3: PeerTime

    public init(exchange: UInt32, echo: Int64, t3: PeerTime) {
        self.exchange = exchange
        self.echo = echo
        self.t3 = t3
    }
}
