import LockstepCore

/// A link between two hosts: a leg each way.
public struct LinkModel: Sendable {
    public var forward: LegModel
    public var backward: LegModel

    public init(forward: LegModel, backward: LegModel) {
        self.forward = forward
        self.backward = backward
    }

    public static func symmetric(_ leg: LegModel) -> LinkModel { LinkModel(forward: leg, backward: leg) }

    /// Both ways a veth (``LegModel/veth``).
    public static let veth = LinkModel.symmetric(.veth)
    /// Both ways 5 ms ± 1 ms, uniform (``LegModel/netemJitter``).
    public static let jitter = LinkModel.symmetric(.netemJitter)
    /// A veth losing 10 % of the packets each way.
    public static var lossyVeth: LinkModel {
        var leg = LegModel.veth
        leg.loss = 0.1
        return .symmetric(leg)
    }
    /// A veth whose outbound minimum delay creeps up by 4 µs and back every minute
    /// (``LegModel/creep``), the return leg steady: the envelopes take the drift for skew.
    public static var creepingVeth: LinkModel {
        var out = LegModel.veth
        out.creep = (4_000, 60 * Nanos.second)
        return LinkModel(forward: out, backward: .veth)
    }
}
