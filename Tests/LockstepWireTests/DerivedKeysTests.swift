import LockstepCore
import Testing

@testable import LockstepPeerWire

/// Datagram keys derived from session and pairwise keys are kept, by the key they came from.
@Suite("Derived datagram keys")
struct DerivedKeysTests {
    let alice = PeerID(high: 1, low: 1)
    let bob = PeerID(high: 2, low: 2)
    let group = GroupKey(bytes: Array(repeating: 7, count: 32), epoch: 1)!

    static func session(_ byte: UInt8) -> GroupKey { GroupKey(bytes: Array(repeating: byte, count: 32), epoch: GroupKey.sessionEpoch)! }

    @Test("a sealer alternating between two session keys seals each datagram under the key it is given; the opener, holding both, opens every one and names the key that did")
    func alternatingSessionKeys() throws {
        let sealer = EnvelopeSealer(sender: alice, incarnation: 9, key: group)
        let opener = EnvelopeOpener(me: bob, keys: [group])
        let (one, two) = (Self.session(1), Self.session(2))
        opener.acceptSession([one, two], from: alice)
        for n in 0..<6 {
            let key = n % 2 == 0 ? one : two
            let opened = try opener.open(sealer.seal([UInt8(n)], with: key))
            #expect(opened.plaintext == [UInt8(n)])
            #expect(opened.header.sessionKey == key)
        }
        // A receiver that holds only the first key opens only what was sealed under it.
        let other = EnvelopeOpener(me: bob, keys: [group])
        other.acceptSession([one], from: alice)
        #expect(throws: Envelope.Rejection.authenticationFailed) { try other.open(sealer.seal([9], with: two)) }
        #expect(try other.open(sealer.seal([8], with: one)).plaintext == [8])
    }

    @Test("past its capacity the cache starts empty, and what it drops is derived again: no key is ever wrong")
    func capacity() {
        var cache = DerivedKeys()
        let first = DerivedKeys.ID(bytes: Array(repeating: 1, count: 32), epoch: GroupKey.sessionEpoch, sender: alice, incarnation: 0)
        let key = Self.session(1).datagramKey(sender: alice, incarnation: 0)
        cache.insert(key, for: first)
        #expect(cache.key(first) == key)
        for i in 1..<DerivedKeys.capacity { cache.insert(key, for: .init(bytes: first.bytes, epoch: first.epoch, sender: alice, incarnation: UInt64(i))) }
        #expect(cache.key(first) == key, "still within the capacity")
        cache.insert(key, for: .init(bytes: first.bytes, epoch: first.epoch, sender: bob, incarnation: 0))
        #expect(cache.key(first) == nil, "the next insert started it over")
        let sealer = EnvelopeSealer(sender: alice, incarnation: 3, key: group)
        let opener = EnvelopeOpener(me: bob, keys: [group])
        opener.acceptSession([Self.session(5)], from: alice)
        for n in 0..<3 { #expect((try? opener.open(sealer.seal([UInt8(n)], with: Self.session(5))))?.plaintext == [UInt8(n)]) }
    }
}
