/// The group's time scale, read from this node: what stamps operations (a hybrid logical clock's
/// physical part) and the clock their instants are written on (the basis).
///
/// - **Stamps** use the most advanced device clock this node knows of (its own, or any peer's
///   through its last estimate): max() of clocks never jumps back while the estimates live, so
///   the hybrid logical clock stays close to real time, and every node reads nearly the same
///   value (to within its estimates' error).
/// - **Instants** (`at`, anchors) are written on the clock of the *basis*: the known member with
///   the smallest peer id. Commands from different origins then compose with plain arithmetic,
///   the same on every replica. The basis only changes when a member with a smaller id appears.
///
/// Estimates are kept after their peer is lost (extrapolated with its skew), so that both sides
/// of a partition go on stamping on the same scale; they go when the peer is forgotten.
public struct GroupClock: Sendable {
    public let me: PeerID
    public private(set) var estimates: [PeerID: ClockEstimate] = [:]

    public init(me: PeerID) {
        self.me = me
    }

    /// The latest estimate of `peer`'s clock.
    public mutating func observe(_ peer: PeerID, _ estimate: ClockEstimate) {
        guard peer != me else { return }
        estimates[peer] = estimate
    }

    /// `peer` left the group for good.
    public mutating func forget(_ peer: PeerID) {
        estimates[peer] = nil
    }

    /// The member whose clock instants are written on.
    public var basis: PeerID { estimates.keys.min().map { min($0, me) } ?? me }

    /// The most advanced known clock's reading at local time `t`, ns.
    public func stampTime(at t: LocalTime) -> Int64 {
        estimates.values.reduce(t.ns) { max($0, $1.peerTime(at: t).ns) }
    }

    /// Local time `t` on the basis's clock, and the error bound of that conversion.
    public func onBasis(_ t: LocalTime) -> (time: PeerTime, bound: TimeSpan) {
        let b = basis
        guard b != me, let e = estimates[b] else { return (PeerTime(ours: t), .zero) }
        return (e.peerTime(at: t), e.errorBoundSpan(at: t))
    }
}
