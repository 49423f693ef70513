import LockstepPlayerProtocol

extension MPVBridgePolicy {
    /// What to do, in order.
    public enum Action: Sendable, Equatable {
        /// mpv: `set_property pause`.
        case setPause(Bool)
        /// mpv: `set_property speed`.
        case setSpeed(Double)
        /// mpv: `seek <s> absolute+exact`.
        case seek(positionNs: Int64)
        /// mpv: `show-text`.
        case showText(String)
        /// Agent requests.
        case load(LoadRequest)
        case unload
        case ready
        case buffering
        case intent(IntentRequest)
        case report(PositionReport)
        /// Agent: `start_latency`, this mpv's next start needs this long (ns).
        case declareStartLatency(Int64)
    }
}
