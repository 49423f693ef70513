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
        /// Coordinator calls: `transition(toItem:)`, `leaveItem`, `setReady(true)`,
        /// `setReady(false)`.
        case load(LoadRequest)
        case unload
        case ready
        case buffering
        /// The user's change, for the group: `coordinatePlay` (or `coordinateRateChange` with a
        /// rate), `coordinatePause`, `coordinateSeek`, `coordinateSpeedChange`.
        case intent(IntentRequest)
        /// `updateStartLatency`: this mpv's next start needs this long (ns).
        case declareStartLatency(Int64)
    }
}
