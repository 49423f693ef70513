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
    }

    static let capacity = 512
    private var keys: [ID: SymmetricKey] = [:]

    func key(_ id: ID) -> SymmetricKey? { keys[id] }

    mutating func insert(_ key: SymmetricKey, for id: ID) {
        if keys.count >= Self.capacity { keys.removeAll(keepingCapacity: true) }
        keys[id] = key
    }
}
