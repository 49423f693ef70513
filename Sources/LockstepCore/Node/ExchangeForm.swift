/// How a clock request goes out (``NodeDirective/sendClockRequest(exchange:to:form:)``): as a
/// `clock_request`, or in interleaved form (`interleaved_request`, §4.2c of the peer protocol)
/// with the result of the previous exchange if one is owed.
public enum RequestForm: Sendable, Equatable {
    case plain
    case interleaved(ExchangeResult?)

    /// The request in this form, carrying `t1` (the shell stamps it as it sends).
    public func message(exchange: UInt32, t1: LocalTime) -> PeerMessage {
        switch self {
        case .plain: .clockRequest(exchange: exchange, t1: PeerTime(ours: t1))
        case .interleaved(let result): .interleavedRequest(exchange: exchange, t1: PeerTime(ours: t1), result: result)
        }
    }
}

/// How a clock reply goes out (``NodeDirective/sendClockReply(exchange:echo:t2:to:form:)``): as a
/// `clock_reply` (followed by a `clock_follow_up` where the kernel reports its transmit time),
/// or in interleaved form (`interleaved_reply`) with the transmit time of the previous reply if
/// the kernel said.
public enum ReplyForm: Sendable, Equatable {
    case plain
    case interleaved(ClockFollowUp?)

    /// The reply in this form, carrying `t2` and `t3` (the shell stamps `t3` as it sends).
    public func message(exchange: UInt32, echo: Int64, t2: LocalTime, t3: LocalTime) -> PeerMessage {
        switch self {
        case .plain: .clockReply(exchange: exchange, echo: echo, t2: PeerTime(ours: t2), t3: PeerTime(ours: t3))
        case .interleaved(let followUp): .interleavedReply(exchange: exchange, echo: echo, t2: PeerTime(ours: t2), t3: PeerTime(ours: t3), followUp: followUp)
        }
    }
}
