/// Which peers a node measures itself: all of them in a small group, a row and a column of a
/// grid in a large one (`Protocol/peer-protocol.md` §3.1).
///
/// Above ``denseUpTo`` peers, the group's devices (this node and every peer it knows, sorted by
/// peer id) are laid out row by row in a grid ⌈√n⌉ wide, and a node measures the devices in its
/// own row and its own column: about 2(√n − 1) peers, 14 of 63. Every other device is two hops
/// away through one or two of them: through the device at (its row, our column) and the one at
/// (our row, its column), at least one of which exists even when the last row is short. Those
/// neighbours report their estimates (``ClockReport``), and ``MeshClock`` composes a path from
/// both links' estimates and bounds (``OffsetEstimate/composed(with:at:)``).
///
/// Why a grid, and by peer id: both ends of a link compute it alike from the same membership,
/// with no agreement protocol, so a link is measured by both or (while their views differ for a
/// moment) answered by the other end anyway; peer ids are random, so rows and columns mix the
/// group's devices without regard to where they are (diversity), and most devices are reached by
/// two disjoint paths, which cross-check each other. Measured quality enters afterwards: of the
/// paths to a device, ``MeshClock`` averages those that agree with the one of smallest bound
/// (weights 1/bound²), and distrusts a link the mesh contradicts. Lost devices keep their place until forgotten, so a device that drops
/// out for a while does not reshuffle everyone's neighbours.
public struct ClockNeighbours: Sendable, Equatable {
    /// Groups of up to this many peers (plus this node) measure every peer directly.
    public var denseUpTo: Int

    public init(denseUpTo: Int = 8) {
        self.denseUpTo = max(denseUpTo, 0)
    }

    /// The peers `me` measures among `peers` (`me` is ignored if present).
    public func measured(by me: PeerID, among peers: Set<PeerID>) -> Set<PeerID> {
        var others = peers
        others.remove(me)
        guard others.count > denseUpTo else { return others }
        let devices = (others + [me]).sorted()
        guard let index = devices.firstIndex(of: me) else { return others }
        let width = Self.width(devices.count)
        let row = index / width, column = index % width
        var out = Set<PeerID>()
        for (i, device) in devices.enumerated() where i != index && (i / width == row || i % width == column) {
            out.insert(device)
        }
        return out
    }

    /// The grid's width for `count` devices: ⌈√count⌉.
    static func width(_ count: Int) -> Int {
        var w = 1
        while w * w < count { w += 1 }
        return w
    }
}
