import Crypto
import LockstepCore
import LockstepPeerWire

/// `EnvelopeOpener.open` with fixed keys. The first byte chooses the mode:
///
/// - even: the rest is one raw datagram, opened by a fresh opener. It must be refused or, if it
///   opens (only a validly sealed seed can), refused as `replayed` the second time, and its
///   plaintext goes through the peer target.
/// - odd: the rest is a script of up to 32 datagrams that this target seals itself (any sender,
///   incarnation, sequence number and key, optionally tampered with or cut short), opened in
///   order by one opener and checked against a model of the replay window: an authentic
///   datagram opens, with its plaintext, exactly when the model says it is fresh.
///
///     script step: op(1) incarnation(1) sequence(2, or 8 if op & 0x04) length(1) plaintext(length)
///                  [bit to flip(1) if op & 0x20] [bytes to cut(1) if op & 0x40]
///     op bits: 0-1 sender (3 = the opener itself), 3-4 key (epoch 1, epoch 2, a stranger's
///              key under epoch 1, an unknown epoch), 5 flip a bit, 6 cut short
enum EnvelopeTarget {
    static let me = PeerID(high: 0xfeed, low: 0xfeed)
    static let senders = [SampleMessages.alice, SampleMessages.bob, SampleMessages.carol, me]
    static let current = GroupKey(bytes: Array(repeating: 0x11, count: 32), epoch: 1)!
    static let next = GroupKey(bytes: Array(repeating: 0x22, count: 32), epoch: 2)!
    static let stranger = GroupKey(bytes: Array(repeating: 0x33, count: 32), epoch: 1)!
    static let unknown = GroupKey(bytes: Array(repeating: 0x44, count: 32), epoch: 3)!
    static let keys = [current, next, stranger, unknown]

    static func run(_ bytes: [UInt8]) {
        _ = sealerAgrees
        var input = FuzzInput(bytes)
        if input.byte() & 1 == 0 {
            raw(input.rest())
        } else {
            script(&input)
        }
    }

    static func raw(_ datagram: [UInt8]) {
        let opener = EnvelopeOpener(me: me, keys: [current, next])
        guard let (_, plaintext) = try? opener.open(datagram) else { return }
        do {
            _ = try opener.open(datagram)
            fatalError("envelope: a datagram opened twice: \(hex(datagram))")
        } catch {
            require(error == .replayed, "envelope: a datagram opened twice was refused as \(error), not replayed")
        }
        PeerMessageTarget.run(plaintext)
    }

    /// What the opener should remember of one sender (the replay window, as a set).
    struct SenderModel {
        var incarnation: UInt64
        var highest: UInt64 = 0
        var seen: Set<UInt64> = []
    }

    static func script(_ input: inout FuzzInput) {
        let opener = EnvelopeOpener(me: me, keys: [current, next])
        var model: [PeerID: SenderModel] = [:]
        var step = 0
        // A few dozen steps reach every state of the window (sequence numbers are jumps, not
        // counts); longer scripts would only slow the fuzzer down.
        while !input.isEmpty && step < 32 {
            step += 1
            let op = input.byte()
            let sender = senders[Int(op & 3)]
            let key = keys[Int(op >> 3 & 3)]
            let incarnation = UInt64(input.byte())
            let sequence = op & 4 != 0 ? input.integer(UInt64.self) : UInt64(input.integer(UInt16.self))
            let plaintext = input.bytes(Int(input.byte()))
            var datagram = seal(plaintext, sender: sender, incarnation: incarnation, sequence: sequence, key: key)
            var damaged = false
            if op & 0x20 != 0 {
                let bit = Int(input.byte())
                datagram[bit / 8 % datagram.count] ^= 1 << (bit % 8)
                damaged = true
            }
            if op & 0x40 != 0 {
                datagram.removeLast(1 + Int(input.byte()) % datagram.count)
                damaged = true
            }

            let result = Result { () throws(Envelope.Rejection) in try opener.open(datagram) }
            let context = "envelope step \(step): sender \(op & 3), key \(op >> 3 & 3), incarnation \(incarnation), sequence \(sequence)"
            if damaged || sender == me || key == stranger || key == unknown {
                if case .success = result { fatalError("\(context): a damaged, forged or own datagram opened") }
                if !damaged {
                    let expected: Envelope.Rejection = sender == me ? .fromSelf : key == unknown ? .unknownKeyEpoch : .authenticationFailed
                    require(result.failure == expected, "\(context): refused as \(String(describing: result.failure)), expected \(expected)")
                }
                continue
            }
            var state = model[sender] ?? SenderModel(incarnation: incarnation)
            let expected: Envelope.Rejection?
            if incarnation < state.incarnation {
                expected = .staleIncarnation
            } else {
                if incarnation > state.incarnation { state = SenderModel(incarnation: incarnation) }
                let fresh = sequence > state.highest || (state.highest - sequence < EnvelopeOpener.replayWindow && !state.seen.contains(sequence))
                expected = fresh ? nil : .replayed
                if fresh {
                    state.seen.insert(sequence)
                    state.highest = max(state.highest, sequence)
                    model[sender] = state
                }
            }
            switch result {
            case .success(let (header, opened)):
                require(expected == nil, "\(context): opened, expected \(expected!)")
                require(opened == plaintext, "\(context): opened to another plaintext")
                require(header.sender == sender && header.incarnation == incarnation && header.sequence == sequence, "\(context): wrong header \(header)")
            case .failure(let rejection):
                require(expected == rejection, "\(context): refused as \(rejection), expected \(expected.map { "\($0)" } ?? "to open")")
            }
        }
    }

    /// A datagram sealed as `EnvelopeSealer` would, with any sequence number (the sealer counts
    /// from 1). Checked against the sealer once, in ``sealerAgrees``.
    static func seal(_ plaintext: [UInt8], sender: PeerID, incarnation: UInt64, sequence: UInt64, key: GroupKey) -> [UInt8] {
        var header = Envelope.magic + [Envelope.version, UInt8(truncatingIfNeeded: key.epoch)] + sender.bytes
        withUnsafeBytes(of: incarnation.bigEndian) { header += $0 }
        withUnsafeBytes(of: sequence.bigEndian) { header += $0 }
        var info = Array("lockstep datagram v1".utf8) + sender.bytes
        withUnsafeBytes(of: incarnation.bigEndian) { info += $0 }
        withUnsafeBytes(of: key.epoch.bigEndian) { info += $0 }
        let derived = HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: key.bytes), info: info, outputByteCount: 32)
        var nonce = [UInt8](repeating: 0, count: 4)
        withUnsafeBytes(of: sequence.bigEndian) { nonce += $0 }
        do {
            let box = try ChaChaPoly.seal(Envelope.pad(plaintext), using: derived, nonce: ChaChaPoly.Nonce(data: nonce), authenticating: header)
            return header + box.ciphertext + box.tag
        } catch {
            fatalError("envelope: sealing failed: \(error)")
        }
    }

    /// This target's sealing is the agent's: if `Envelope` changes, the target must follow.
    static let sealerAgrees: Void = {
        let plaintext = PeerMessage.goodbye.encoded()
        let sealed = EnvelopeSealer(sender: SampleMessages.alice, incarnation: 5, key: next).seal(plaintext)
        require(sealed == seal(plaintext, sender: SampleMessages.alice, incarnation: 5, sequence: 1, key: next),
                "envelope: the target's sealing no longer matches EnvelopeSealer; update EnvelopeTarget.seal")
    }()

    static var seeds: [(name: String, bytes: [UInt8])] {
        var out: [(name: String, bytes: [UInt8])] = []
        // Raw: every sample message sealed by a real sealer, and a few near-misses.
        let sealer = EnvelopeSealer(sender: SampleMessages.bob, incarnation: 9, key: current)
        for (name, message) in SampleMessages.all {
            out.append(("raw-" + name, [0] + sealer.seal(message.encoded())))
        }
        let hello = sealer.seal(PeerMessage.hello(name: "x", wantsReply: true).encoded())
        out.append(("raw-header-only", [0] + hello.prefix(Envelope.headerBytes + Envelope.tagBytes)))
        out.append(("raw-other-version", [0] + hello.prefix(2) + [2] + hello.dropFirst(3)))
        out.append(("raw-not-lockstep", [0] + Array("GET / HTTP/1.1\r\n".utf8)))
        // Scripts: in order, reordered, replayed, old, new incarnation, rotation, forged.
        func step(_ op: UInt8, incarnation: UInt8, sequence: UInt16, _ plaintext: [UInt8] = [4], position: UInt8? = nil) -> [UInt8] {
            [op, incarnation, UInt8(sequence >> 8), UInt8(sequence & 0xff), UInt8(plaintext.count)] + plaintext + (position.map { [$0] } ?? [])
        }
        let clock = PeerMessage.clockRequest(exchange: 1, t1: PeerTime(ns: 2)).encoded()
        out.append(("script-in-order", [1] + step(0, incarnation: 1, sequence: 1, clock) + step(0, incarnation: 1, sequence: 2) + step(0, incarnation: 1, sequence: 3)))
        out.append(("script-reordered-replayed", [1] + step(1, incarnation: 1, sequence: 5) + step(1, incarnation: 1, sequence: 3) + step(1, incarnation: 1, sequence: 5) + step(1, incarnation: 1, sequence: 3)))
        out.append(("script-window", [1] + step(2, incarnation: 1, sequence: 2000) + step(2, incarnation: 1, sequence: 976) + step(2, incarnation: 1, sequence: 977) + step(2, incarnation: 1, sequence: 3100)))
        out.append(("script-incarnations", [1] + step(0, incarnation: 2, sequence: 10) + step(0, incarnation: 1, sequence: 11) + step(0, incarnation: 3, sequence: 1)))
        out.append(("script-rotation", [1] + step(0, incarnation: 1, sequence: 1) + step(0x08, incarnation: 1, sequence: 2) + step(0, incarnation: 1, sequence: 3)))
        out.append(("script-forged", [1] + step(0x10, incarnation: 1, sequence: 1) + step(0x18, incarnation: 1, sequence: 1) + step(3, incarnation: 1, sequence: 1)))
        out.append(("script-damaged", [1] + step(0x20, incarnation: 1, sequence: 1, position: 200) + step(0x40, incarnation: 1, sequence: 1, position: 3) + step(0, incarnation: 1, sequence: 1)))
        out.append(("script-wide-sequence", [1, 0x04, 1] + [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe] + [1, 4] + [0x04, 1] + [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff] + [1, 4]))
        return out
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let e) = self { return e }
        return nil
    }
}
