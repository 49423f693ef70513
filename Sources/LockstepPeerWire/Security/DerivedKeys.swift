import Crypto
import LockstepCore

/// Datagram keys derived from pairwise and session keys, by what they were derived from (so an
/// entry is right for as long as it is kept), at most ``capacity`` of them: past that it starts
/// empty again, and a dropped key is only derived again. The opener keeps a key only once it has
/// opened an authentic datagram, so strangers' junk headers cannot fill it.
struct DerivedKeys: Sendable {
    struct ID: Hashable, Sendable {
        var bytes: [UInt8]
        var epoch: UInt32
        var sender: PeerID
        var incarnation: UInt64

        /// The datagram key that `key` gives `sender` in its `incarnation`.
        init(_ key: GroupKey, sender: PeerID, incarnation: UInt64) {
            self.init(bytes: key.bytes, epoch: key.epoch, sender: sender, incarnation: incarnation)
        }

        init(bytes: [UInt8], epoch: UInt32, sender: PeerID, incarnation: UInt64) {
            self.bytes = bytes
            self.epoch = epoch
            self.sender = sender
            self.incarnation = incarnation
        }
    }

    static let capacity = 512
    private var keys: [ID: SymmetricKey] = [:]

    func key(_ id: ID) -> SymmetricKey? { keys[id] }

    mutating func insert(_ key: SymmetricKey, for id: ID) {
        if keys.count >= Self.capacity { keys.removeAll(keepingCapacity: true) }
        keys[id] = key
    }
}
