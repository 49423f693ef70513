import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LockstepCore
import Synchronization

/// The outside of every peer datagram: who sent it, and the sealed message.
///
///      0      2   3   4                      20               28             36
///     +------+---+---+----------------------+----------------+--------------+---------------+---------+
///     | "LK" | v | e | sender peer id (16)  | incarnation(8) | sequence (8) | ciphertext... | tag(16) |
///     +------+---+---+----------------------+----------------+--------------+---------------+---------+
///      v = wire version (1); e = low byte of the key epoch. The 36-byte header is authenticated.
///
/// ChaCha20-Poly1305 with a key per sender incarnation, HKDF-SHA256(group key, sender ‖ incarnation
/// ‖ epoch), and the sequence number as nonce: every (key, nonce) pair is used once, since an
/// incarnation is new at each start and its sequence only grows. See `Protocol/peer-protocol.md`.
public enum Envelope {
    public static let magic: [UInt8] = [0x4C, 0x4B]  // "LK"
    public static let version = UInt8(PeerProtocol.version)
    public static let headerBytes = 36
    public static let tagBytes = 16
    /// The largest datagram an agent sends or accepts (fits a 1500-byte Ethernet MTU over IPv6).
    public static let maxDatagramBytes = 1452
    public static var maxPlaintextBytes: Int { maxDatagramBytes - headerBytes - tagBytes }
    /// The sizes a message is padded to before sealing (review finding L3: message types showed
    /// by their length): it is followed by 0x80 and zeros up to the first size larger than it.
    /// Every clock message, goodbye, ack, key_ack and session_offer is 64 bytes, 116 sealed.
    public static let paddedSizes = [64, 128, 256, 512, 1024, maxDatagramBytes - headerBytes - tagBytes]
    /// The largest message a datagram carries (one byte goes to the padding's 0x80).
    public static var maxMessageBytes: Int { maxPlaintextBytes - 1 }

    /// `message` followed by 0x80 and zeros up to its size in ``paddedSizes``.
    public static func pad(_ message: [UInt8]) -> [UInt8] {
        let size = paddedSizes.first { $0 > message.count } ?? message.count + 1
        var out = message
        out.reserveCapacity(size)
        out.append(0x80)
        out.append(contentsOf: repeatElement(0, count: size - out.count))
        return out
    }

    /// The message inside a padded plaintext; nil if the padding is not canonical.
    public static func unpad(_ padded: [UInt8]) -> [UInt8]? {
        guard paddedSizes.contains(padded.count), let end = padded.lastIndex(where: { $0 != 0 }), padded[end] == 0x80 else { return nil }
        return Array(padded[..<end])
    }

    /// The header fields, readable without the key.
    public struct Header: Equatable, Sendable {
        public var version: UInt8
        public var epochByte: UInt8
        public var sender: PeerID
        public var incarnation: UInt64
        public var sequence: UInt64
        /// Set by ``EnvelopeOpener/open(_:hostNow:wallClockMicros:)`` for a session-sealed
        /// datagram: the session key that opened it.
        public var sessionKey: GroupKey?
    }

    /// Why a datagram was dropped before reaching the agent. Each is counted.
    public enum Rejection: Error, Equatable, Sendable, CustomStringConvertible {
        case notLockstep
        case unknownVersion(UInt8)
        case tooShort
        case tooLong
        case unknownKeyEpoch
        case authenticationFailed
        case replayed
        case staleIncarnation
        /// An incarnation far beyond the receiver's wall clock: incarnations are the sender's
        /// wall clock at start (µs), so this is a forgery (it would lock its sender out) or a
        /// device whose clock is years ahead.
        case implausibleIncarnation
        case fromSelf
        /// An authentic datagram with this agent's own peer id but another incarnation: another
        /// device holds this device's key (a copied state directory, or a cloned SD card).
        case clone
        /// Not one of the padded sizes, or padding that is not 0x80 and zeros (peer protocol §2).
        case badPadding

        public var description: String {
            switch self {
            case .notLockstep: "not a Lockstep datagram"
            case .unknownVersion(let v): "unknown wire version \(v) (this agent speaks \(Envelope.version): upgrade the older agent)"
            case .tooShort: "shorter than a header and tag"
            case .tooLong: "longer than \(Envelope.maxDatagramBytes) bytes"
            case .unknownKeyEpoch: "sealed with a key epoch this agent does not hold"
            case .authenticationFailed: "authentication failed (another group's key, or tampered)"
            case .replayed: "replayed or duplicated sequence number"
            case .staleIncarnation: "from an older incarnation of its sender"
            case .implausibleIncarnation: "its sender's incarnation is more than a day ahead of this agent's wall clock"
            case .fromSelf: "from this agent itself"
            case .clone: "another device uses this device's key (a copied state directory?): on one of them (not both), lockstep group reset-identity"
            case .badPadding: "not padded to one of the envelope's sizes"
            }
        }

        /// A stable short name for counters.
        public var counterName: String {
            switch self {
            case .notLockstep: "not_lockstep"
            case .unknownVersion: "unknown_version"
            case .tooShort: "too_short"
            case .tooLong: "too_long"
            case .unknownKeyEpoch: "unknown_key_epoch"
            case .authenticationFailed: "auth_failed"
            case .replayed: "replayed"
            case .staleIncarnation: "stale_incarnation"
            case .implausibleIncarnation: "implausible_incarnation"
            case .fromSelf: "from_self"
            case .clone: "clone"
            case .badPadding: "bad_padding"
            }
        }
    }

    /// Parses the header only (no key needed).
    public static func header(of datagram: [UInt8]) throws(Rejection) -> Header {
        guard datagram.count >= 2, datagram[0] == magic[0], datagram[1] == magic[1] else { throw .notLockstep }
        guard datagram.count >= 3 else { throw .tooShort }
        guard datagram[2] == version else { throw .unknownVersion(datagram[2]) }
        guard datagram.count >= headerBytes + tagBytes else { throw .tooShort }
        guard datagram.count <= maxDatagramBytes else { throw .tooLong }
        var r = ByteReader(datagram, offset: 3)
        do {
            let epoch = try r.u8("epoch")
            let sender = PeerID(high: try r.u64("sender"), low: try r.u64("sender"))
            let incarnation = try r.u64("incarnation")
            let sequence = try r.u64("sequence")
            return Header(version: version, epochByte: epoch, sender: sender, incarnation: incarnation, sequence: sequence)
        } catch {
            throw .tooShort
        }
    }

    static func writeHeader(_ h: Header, into w: inout ByteWriter) {
        w.raw(magic)
        w.u8(h.version)
        w.u8(h.epochByte)
        w.raw(h.sender.bytes)
        w.u64(h.incarnation)
        w.u64(h.sequence)
    }

    static func nonce(_ sequence: UInt64) -> ChaChaPoly.Nonce {
        try! ChaChaPoly.Nonce(data: nonceBytes(sequence))
    }

    /// The 12 bytes of a datagram's nonce: 4 zero bytes, then the sequence number (big-endian).
    static func nonceBytes(_ sequence: UInt64) -> [UInt8] {
        var n = [UInt8](repeating: 0, count: 12)
        for i in 0..<8 { n[4 + i] = UInt8(truncatingIfNeeded: sequence >> UInt64(56 - 8 * i)) }
        return n
    }

    /// `datagram`'s ciphertext and tag (contiguous after the header) behind its nonce, as one
    /// sealed box: one copy. `SealedBox(nonce:ciphertext:tag:)` concatenated three `Data` from
    /// slices element by element, 4 % of an idle agent's CPU at 8 hosts.
    static func sealedBox(of datagram: [UInt8], sequence: UInt64) -> ChaChaPoly.SealedBox? {
        guard datagram.count >= headerBytes + tagBytes else { return nil }
        var combined = nonceBytes(sequence)
        combined.reserveCapacity(combined.count + datagram.count - headerBytes)
        combined.append(contentsOf: datagram[headerBytes...])
        return try? ChaChaPoly.SealedBox(combined: combined)
    }
}

/// Seals this agent's outgoing datagrams. Thread-safe: the sequence number is atomic.
public final class EnvelopeSealer: Sendable {
    public let sender: PeerID
    public let incarnation: UInt64
    private let sequence: Atomic<UInt64>
    private let keys: Mutex<(epoch: UInt8, key: SymmetricKey)>
    /// Keys derived from pairwise and session keys, by the key they came from: a peer's datagrams
    /// go under the same session key for minutes, and deriving it for each was measurable.
    private let derived = Mutex(DerivedKeys())

    /// `after`: the sequence number the first datagram follows (0 for an agent's sealer; the
    /// faults benchmark's forger starts far ahead, as an attacker may).
    public init(sender: PeerID, incarnation: UInt64, key: GroupKey, after: UInt64 = 0) {
        self.sender = sender
        self.incarnation = incarnation
        self.sequence = Atomic(after)
        self.keys = Mutex((UInt8(truncatingIfNeeded: key.epoch), key.datagramKey(sender: sender, incarnation: incarnation)))
    }

    /// Switches to a new group key (rotation); the sequence continues.
    public func use(_ key: GroupKey) {
        let derived = key.datagramKey(sender: sender, incarnation: incarnation)
        keys.withLock { $0 = (UInt8(truncatingIfNeeded: key.epoch), derived) }
    }

    /// The datagram carrying `message` (at most ``Envelope/maxMessageBytes``), padded
    /// (``Envelope/paddedSizes``) and sealed with the current key, or with `other` (a pairwise or
    /// session key).
    public func seal(_ message: [UInt8], with other: GroupKey? = nil) -> [UInt8] {
        precondition(message.count <= Envelope.maxMessageBytes, "peer message too large for a datagram")
        let plaintext = Envelope.pad(message)
        let seq = sequence.wrappingAdd(1, ordering: .relaxed).newValue
        let (epoch, key) = other.map { (UInt8(truncatingIfNeeded: $0.epoch), derivedKey($0)) } ?? keys.withLock { $0 }
        var w = ByteWriter(capacity: Envelope.headerBytes + plaintext.count + Envelope.tagBytes)
        Envelope.writeHeader(.init(version: Envelope.version, epochByte: epoch, sender: sender, incarnation: incarnation, sequence: seq), into: &w)
        let aad = w.bytes
        let box = try! ChaChaPoly.seal(plaintext, using: key, nonce: Envelope.nonce(seq), authenticating: aad)
        w.raw(box.ciphertext)
        w.raw(box.tag)
        return w.bytes
    }

    private func derivedKey(_ other: GroupKey) -> SymmetricKey {
        let id = DerivedKeys.ID(other, sender: sender, incarnation: incarnation)
        if let key = derived.withLock({ $0.key(id) }) { return key }
        let key = other.datagramKey(sender: sender, incarnation: incarnation)
        derived.withLock { $0.insert(key, for: id) }
        return key
    }
}

/// Opens incoming datagrams: checks the header, authenticates and decrypts with the group's
/// keys, and refuses replays (a sliding window of sequence numbers per sender incarnation).
/// Thread-safe; meant to be called from one receive thread.
public final class EnvelopeOpener: Sendable {
    /// Sequence numbers this far behind the newest seen are refused outright.
    public static let replayWindow: UInt64 = 1024
    /// Sender incarnations remembered (keys and replay windows); the least recently used go first.
    public static let maxSenders = 256
    /// Session keys tried per peer: the one it seals under, two agreed and not yet used, and one replaced.
    public static let maxSessionKeys = 4
    /// How far beyond the receiver's wall clock an incarnation may be (µs): a day.
    public static let incarnationLeadMicros: UInt64 = 86_400_000_000
    /// A sender's incarnation silent this long (ns) gives way to a lower one that authenticates:
    /// the sender lost its incarnation file, or the higher one was forged by a member to lock it
    /// out; either way the sender must not stay shut out until the receiver restarts.
    public static let incarnationSilenceNs: Int64 = 10_000_000_000

    private struct SenderState {
        var incarnation: UInt64
        var key: SymmetricKey
        var epoch: UInt8
        var highest: UInt64
        var window: [UInt64]  // bitmap of the last `replayWindow` sequence numbers
        var lastUsed: UInt64
        /// Host time of the last authentic datagram of this incarnation.
        var lastHeard: Int64 = 0
        /// The key set `key` was derived from: a cached key is used only while it is current.
        var generation: UInt64 = 0
    }

    private struct State {
        var keys: [UInt8: GroupKey] = [:]
        /// Keys shared with each member, for datagrams sealed pairwise (epoch byte 0xff).
        var pairKeys: [PeerID: GroupKey] = [:]
        /// Each peer's session keys, newest first (epoch byte 0xfe).
        var sessionKeys: [PeerID: [GroupKey]] = [:]
        /// Senders of datagrams sealed under a group key.
        var senders: [PeerID: SenderState] = [:]
        /// Senders of datagrams sealed pairwise or under a session, apart: only the sender itself
        /// can seal those, so a member forging its id under the group key (an incarnation far
        /// ahead, which shuts out the real one for ``incarnationSilenceNs``) shuts none of them out.
        var boundSenders: [PeerID: SenderState] = [:]
        var tick: UInt64 = 0
        var generation: UInt64 = 0
        /// Keys derived from pairwise and session keys (group keys' are kept per sender above).
        var derived = DerivedKeys()
    }

    private let me: PeerID
    private let myIncarnation: UInt64?
    private let state: Mutex<State>

    /// `incarnation`: this agent's own, to tell a datagram of a clone (same peer id, another
    /// incarnation, authentic) from its own coming back.
    public init(me: PeerID, incarnation: UInt64? = nil, keys: [GroupKey]) {
        self.me = me
        self.myIncarnation = incarnation
        var s = State()
        for k in keys { s.keys[UInt8(truncatingIfNeeded: k.epoch)] = k }
        self.state = Mutex(s)
    }

    /// `sender` said goodbye in `incarnation`, in a datagram only it can seal: that incarnation
    /// counts as silent from now on (see ``incarnationSilenceNs``), so a lower one that
    /// authenticates is taken at once rather than 10 s later. (A device that copied another's
    /// state runs a higher incarnation under its id; told to take a key of its own, it says
    /// goodbye under the old one, and the original must not stay shut out meanwhile.) Its replay
    /// window stays until a datagram of another incarnation replaces it, as after any silence.
    public func departed(_ sender: PeerID, incarnation: UInt64) {
        state.withLock { s in
            Self.silence(sender, incarnation, in: &s.senders)
            Self.silence(sender, incarnation, in: &s.boundSenders)
        }
    }

    private static func silence(_ sender: PeerID, _ incarnation: UInt64, in senders: inout [PeerID: SenderState]) {
        guard senders[sender]?.incarnation == incarnation else { return }
        senders[sender]?.lastHeard = .min / 2
    }

    /// Replaces the accepted keys (current and, after a rotation, previous). Replay windows are
    /// kept (a rotation must not let old datagrams in again); keys derived from the old set are not.
    public func accept(_ keys: [GroupKey]) {
        state.withLock { s in
            s.keys = [:]
            for k in keys { s.keys[UInt8(truncatingIfNeeded: k.epoch)] = k }
            s.generation &+= 1
        }
    }

    /// Replaces the pairwise keys (one per member; a removed device has none).
    public func acceptPairs(_ keys: [PeerID: GroupKey]) {
        state.withLock { s in
            s.pairKeys = keys
            s.generation &+= 1
        }
    }

    /// Replaces `peer`'s session keys (newest first; none: it has no session).
    public func acceptSession(_ keys: [GroupKey], from peer: PeerID) {
        state.withLock { s in
            s.sessionKeys[peer] = keys.isEmpty ? nil : Array(keys.prefix(Self.maxSessionKeys))
        }
    }

    /// The plaintext and header of `datagram`, or why it was refused. `hostNow` (ns, monotonic)
    /// dates it for the incarnation rules; `wallClockMicros` (the receiver's wall clock) bounds
    /// how far ahead an incarnation may be (the defaults switch both rules off, for tests).
    public func open(_ datagram: [UInt8], hostNow: Int64 = 0, wallClockMicros: UInt64 = .max) throws(Envelope.Rejection) -> (header: Envelope.Header, plaintext: [UInt8]) {
        var h = try Envelope.header(of: datagram)
        let fromMe = h.sender == me
        if fromMe && (myIncarnation == nil || myIncarnation == h.incarnation) { throw .fromSelf }
        if h.incarnation > wallClockMicros.addingSaturating(Self.incarnationLeadMicros) { throw .implausibleIncarnation }
        // One comparison before any crypto: a length no sealer makes.
        guard Envelope.paddedSizes.contains(datagram.count - Envelope.headerBytes - Envelope.tagBytes) else { throw .badPadding }
        let aad = datagram[0..<Envelope.headerBytes]

        // Find or derive the sender's key without holding the lock during HKDF. Only group keys
        // are cached per sender: pairwise and session keys change with the roster and rekeying.
        let groupEpoch = h.epochByte != GroupKey.pairEpochByte && h.epochByte != GroupKey.sessionEpochByte
        let (cached, generation): (SymmetricKey?, UInt64) = state.withLock { s in
            guard groupEpoch, let st = s.senders[h.sender], st.generation == s.generation else { return (nil, s.generation) }
            if st.incarnation == h.incarnation && st.epoch == h.epochByte { return (st.key, s.generation) }
            return (nil, s.generation)
        }
        // The keys to try: a group key's derived key is cached per sender; a peer's session keys
        // (up to ``maxSessionKeys``) are derived one at a time, until one opens it.
        var found: [GroupKey] = []
        var derived: [SymmetricKey?] = []
        if cached == nil {
            (found, derived) = state.withLock { s in
                let keys: [GroupKey] = switch h.epochByte {
                case GroupKey.pairEpochByte: s.pairKeys[h.sender].map { [$0] } ?? []
                case GroupKey.sessionEpochByte: s.sessionKeys[h.sender] ?? []
                default: s.keys[h.epochByte].map { [$0] } ?? []
                }
                return (keys, groupEpoch ? keys.map { _ in nil } : keys.map { s.derived.key(DerivedKeys.ID($0, sender: h.sender, incarnation: h.incarnation)) })
            }
            guard !found.isEmpty else { throw .unknownKeyEpoch }
        }
        // Built once, after the key lookup: a datagram under no key this agent has costs no copy.
        guard let box = Envelope.sealedBox(of: datagram, sequence: h.sequence) else { throw .badPadding }
        var opened: (key: SymmetricKey, plaintext: [UInt8], index: Int)?
        for index in 0..<max(found.count, 1) {
            let candidate = cached ?? derived[index] ?? found[index].datagramKey(sender: h.sender, incarnation: h.incarnation)
            guard let plain = try? ChaChaPoly.open(box, using: candidate, authenticating: aad) else { continue }
            opened = (candidate, Array(plain), index)
            break
        }
        guard let opened else { throw fromMe ? .fromSelf : .authenticationFailed }
        let key = opened.key
        let plaintext = opened.plaintext
        if h.epochByte == GroupKey.sessionEpochByte { h.sessionKey = found[opened.index] }
        if !groupEpoch, derived[opened.index] == nil {
            // Kept only once it opened an authentic datagram: junk cannot fill the cache.
            state.withLock { $0.derived.insert(key, for: DerivedKeys.ID(found[opened.index], sender: h.sender, incarnation: h.incarnation)) }
        }
        if fromMe { throw .clone }
        guard let message = Envelope.unpad(plaintext) else { throw .badPadding }
        // Authentic: now the replay check and the sender's state may change.
        let verdict: Envelope.Rejection? = state.withLock { s in
            s.tick &+= 1
            if groupEpoch { return Self.admit(h, key: key, generation: generation, tick: s.tick, hostNow: hostNow, into: &s.senders) }
            return Self.admit(h, key: key, generation: generation, tick: s.tick, hostNow: hostNow, into: &s.boundSenders)
        }
        if let verdict { throw verdict }
        return (h, message)
    }

    /// The incarnation and replay checks of an authentic datagram, against its sender's state in
    /// `senders` (which then records it); nil if it is taken.
    private static func admit(_ h: Envelope.Header, key: SymmetricKey, generation: UInt64, tick: UInt64, hostNow: Int64, into senders: inout [PeerID: SenderState]) -> Envelope.Rejection? {
        let fresh = SenderState(incarnation: h.incarnation, key: key, epoch: h.epochByte, highest: 0, window: .init(repeating: 0, count: Int(replayWindow / 64)), lastUsed: tick, generation: generation)
        guard var st = senders[h.sender] else {
            if senders.count >= maxSenders, let oldest = senders.min(by: { $0.value.lastUsed < $1.value.lastUsed }) {
                senders[oldest.key] = nil
            }
            var st = fresh
            _ = admit(h.sequence, into: &st)
            st.lastHeard = hostNow
            senders[h.sender] = st
            return nil
        }
        let silent = hostNow.subtractingSaturating(st.lastHeard) > incarnationSilenceNs
        if h.incarnation < st.incarnation && !silent { return .staleIncarnation }
        if h.incarnation != st.incarnation { st = fresh }
        st.key = key
        st.epoch = h.epochByte
        st.generation = generation
        st.lastUsed = tick
        guard admit(h.sequence, into: &st) else { return .replayed }
        st.lastHeard = hostNow
        senders[h.sender] = st
        return nil
    }

    /// Marks `seq` as seen; false if it was seen before or is too old.
    private static func admit(_ seq: UInt64, into st: inout SenderState) -> Bool {
        let size = replayWindow
        if seq > st.highest {
            let shift = seq - st.highest
            if shift >= size {
                for i in st.window.indices { st.window[i] = 0 }
            } else {
                for s in (st.highest + 1)...seq { clear(s % size, in: &st.window) }
            }
            st.highest = seq
            set(seq % size, in: &st.window)
            return true
        }
        if st.highest - seq >= size { return false }
        if isSet(seq % size, in: st.window) { return false }
        set(seq % size, in: &st.window)
        return true
    }

    private static func set(_ bit: UInt64, in w: inout [UInt64]) { w[Int(bit / 64)] |= 1 << (bit % 64) }
    private static func clear(_ bit: UInt64, in w: inout [UInt64]) { w[Int(bit / 64)] &= ~(1 << (bit % 64)) }
    private static func isSet(_ bit: UInt64, in w: [UInt64]) -> Bool { w[Int(bit / 64)] & (1 << (bit % 64)) != 0 }
}
