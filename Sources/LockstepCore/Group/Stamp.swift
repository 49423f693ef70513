/// The position of a command in the group's single, deterministic order.
///
/// A Lamport counter is raised past every stamp a peer has seen, so a command issued after
/// seeing another one always has a larger counter: causally later commands win. Commands issued
/// concurrently are ordered by counter, then by origin peer id, then by the origin's incarnation;
/// every peer computes the same order from the same stamps, with no clock and no leader involved.
public struct Stamp: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    public var lamport: UInt64
    public var origin: PeerID
    public var incarnation: UInt64

    public init(lamport: UInt64, origin: PeerID, incarnation: UInt64) {
        self.lamport = lamport
        self.origin = origin
        self.incarnation = incarnation
    }

    public static func < (a: Stamp, b: Stamp) -> Bool {
        (a.lamport, a.origin, a.incarnation) < (b.lamport, b.origin, b.incarnation)
    }

    public var description: String { "\(lamport)@\(origin.short)" }
}
