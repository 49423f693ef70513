/// Who a waiting group waits for.
public struct WaitingFor: Sendable, Equatable, Hashable {
    /// Why it is waited for.
    public enum Why: Sendable, Equatable, Hashable, CustomStringConvertible {
        case loading
        case buffering
        /// Suspended for a reason that makes the group wait.
        case suspended(SuspensionReason)

        /// `loading`, `buffering`, or the suspension reason, as players are told.
        public var description: String {
            switch self {
            case .loading: "loading"
            case .buffering: "buffering"
            case .suspended(let r): r.text
            }
        }
    }

    public var peer: PeerID
    public var playerID: UInt32
    public var name: String
    public var why: Why
}
