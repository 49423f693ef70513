import Crypto
import LockstepCore

/// Per-pair sessions (`Protocol/peer-protocol.md` §2.5): every two members that hear each other
/// agree on a fresh key from ephemeral X25519 keys, authenticated by their pairwise key (so by
/// both device keys and the group), and seal what they send each other under it.
///
/// What a session gives that the group key does not: the key is new at every start of either
/// side and every ``Configuration/rekeyInterval`` (forward secrecy; nonces unique by construction,
/// whatever the clocks or copied state directories); it belongs to one pair (a datagram cannot be
/// replayed to a third member, and no member can seal as another); and a receiver that restarted
/// holds no old session, so nothing captured before opens again.
///
/// The device with the lower peer id offers (`session_offer`, its ephemeral key), the other
/// answers (`session_answer`, its own and the offer's); both sealed pairwise. The offerer seals
/// under the new key at once; the answerer once a datagram under it has arrived (its offer may
/// not have been answered). A restart of either side starts a new one: the restarted side holds
/// none, and the offerer offers when it first hears the other's new incarnation.
///
/// A pure instance: inputs are `on…` calls with the current time, outputs ``Directive``s.
/// (Ephemeral keys are drawn inside, from the system's generator.)
public struct PairSessions: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// An unanswered offer is sent again this often.
        public var retryInterval: TimeSpan = .milliseconds(500)
        /// A session is replaced by a new one this often (by the offerer).
        public var rekeyInterval: TimeSpan = .seconds(120)
        /// The key a new session replaced is still accepted this long.
        public var previousLife: TimeSpan = .seconds(10)

        public init() {}
    }

    public enum Directive: Sendable, Equatable {
        /// Send to the peer, sealed under the key this device shares with it (pairwise).
        case send(PeerMessage, to: PeerID)
        /// Open the peer's session-sealed datagrams with these keys (none: it has no session),
        /// and seal what goes to it under `seal` (nil: under the group key).
        case install(PeerID, accept: [GroupKey], seal: GroupKey?)
    }

    struct Session: Sendable {
        var key: GroupKey
        var sealing: Bool
        var began: LocalTime
        var previous: GroupKey?
        var previousUntil: LocalTime?
    }

    struct Offer: Sendable {
        var ephemeral: Curve25519.KeyAgreement.PrivateKey
        var sentAt: LocalTime
    }

    struct Peer: Sendable {
        var incarnation: UInt64
        var session: Session?
        var offer: Offer?
        /// The offerer's next look at this peer: an offer again, or a renewal (nil: not the offerer).
        var due: LocalTime?
    }

    public let configuration: Configuration
    public let me: PeerID
    private var peers: [PeerID: Peer] = [:]

    public init(me: PeerID, configuration: Configuration = .init()) {
        self.me = me
        self.configuration = configuration
    }

    /// Whether this device offers to `peer` (the lower id offers).
    func offers(to peer: PeerID) -> Bool { me < peer }

    /// The keys open for `peer`, and the one to seal under, as the last ``Directive/install`` said.
    public func keys(for peer: PeerID) -> (accept: [GroupKey], seal: GroupKey?) {
        guard let s = peers[peer]?.session else { return ([], nil) }
        return ([s.key] + (s.previous.map { [$0] } ?? []), s.sealing ? s.key : nil)
    }

    public var established: Int { peers.values.filter { $0.session != nil }.count }
    public var peersWithSessions: [PeerID] { peers.keys.filter { peers[$0]?.session != nil }.sorted() }

    // MARK: - Inputs

    /// An authenticated datagram from member `peer` (incarnation `incarnation`), sealed under a
    /// session key if `underSession`: a new incarnation ends the session; the offerer offers.
    /// `pairKey` is the key shared with it (nil: not a member, nothing to do).
    public mutating func onHeard(_ peer: PeerID, incarnation: UInt64, underSession: Bool, pairKey: GroupKey?, now: LocalTime) -> [Directive] {
        guard peer != me, pairKey != nil else { return [] }
        var out: [Directive] = []
        var p = peers[peer] ?? Peer(incarnation: incarnation)
        if p.incarnation != incarnation {
            // It restarted (or a member forged its id on a group-key datagram): the offerer offers
            // again at once. The session in place stays until a new one replaces it, so a forged
            // incarnation cannot cut two members apart.
            p.incarnation = incarnation
            p.offer = nil
            p.due = nil
        }
        if underSession, var s = p.session, !s.sealing {
            // The offerer seals under the session: it got our answer; we may seal under it too.
            s.sealing = true
            p.session = s
            out.append(.install(peer, accept: [s.key] + (s.previous.map { [$0] } ?? []), seal: s.key))
        }
        peers[peer] = p
        if offers(to: peer), p.offer == nil, p.session == nil || p.due == nil { out += offer(to: peer, now: now) }
        return out
    }

    private mutating func offer(to peer: PeerID, now: LocalTime) -> [Directive] {
        let e = Curve25519.KeyAgreement.PrivateKey()
        peers[peer]?.offer = Offer(ephemeral: e, sentAt: now)
        peers[peer]?.due = now + configuration.retryInterval
        return [.send(.sessionOffer(ephemeral: Array(e.publicKey.rawRepresentation)), to: peer)]
    }

    /// A `session_offer` from `peer`, which arrived sealed pairwise if `pairwise`, under `pairKey`.
    public mutating func onOffer(_ ephemeral: [UInt8], from peer: PeerID, incarnation: UInt64, pairwise: Bool, pairKey: GroupKey?, now: LocalTime) -> [Directive] {
        guard pairwise, let pairKey, !offers(to: peer), let theirs = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: ephemeral) else { return [] }
        var p = peers[peer] ?? Peer(incarnation: incarnation)
        p.incarnation = incarnation
        let e = Curve25519.KeyAgreement.PrivateKey()
        guard let key = Self.sessionKey(mine: e, theirs: theirs, myID: me, theirID: peer, pairKey: pairKey) else { return [] }
        // The answerer seals under the new key only once the offerer uses it.
        let old = p.session
        p.session = Session(key: key, sealing: false, began: now, previous: old?.key, previousUntil: old == nil ? nil : now + configuration.previousLife)
        peers[peer] = p
        return [
            .install(peer, accept: [key] + (old.map { [$0.key] } ?? []), seal: old?.sealing == true ? old?.key : nil),
            .send(.sessionAnswer(ephemeral: Array(e.publicKey.rawRepresentation), offer: ephemeral), to: peer),
        ]
    }

    /// A `session_answer` from `peer` to this device's offer.
    public mutating func onAnswer(_ ephemeral: [UInt8], offer: [UInt8], from peer: PeerID, pairwise: Bool, pairKey: GroupKey?, now: LocalTime) -> [Directive] {
        guard pairwise, let pairKey, var p = peers[peer], let o = p.offer, Array(o.ephemeral.publicKey.rawRepresentation) == offer,
              let theirs = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: ephemeral),
              let key = Self.sessionKey(mine: o.ephemeral, theirs: theirs, myID: me, theirID: peer, pairKey: pairKey) else { return [] }
        let old = p.session
        p.session = Session(key: key, sealing: true, began: now, previous: old?.key, previousUntil: old == nil ? nil : now + configuration.previousLife)
        p.offer = nil
        p.due = now + configuration.rekeyInterval
        peers[peer] = p
        return [.install(peer, accept: [key] + (old.map { [$0.key] } ?? []), seal: key)]
    }

    /// `peer` left the group or is forgotten: its session goes.
    public mutating func onGone(_ peer: PeerID) -> [Directive] {
        guard peers.removeValue(forKey: peer)?.session != nil else { return [] }
        return [.install(peer, accept: [], seal: nil)]
    }

    /// Time passes: unanswered offers again, sessions renewed, replaced keys dropped. Only
    /// `reachable` peers are offered to.
    public mutating func onTick(now: LocalTime, reachable: Set<PeerID>) -> [Directive] {
        var out: [Directive] = []
        for id in peers.keys.sorted() {
            guard var p = peers[id] else { continue }
            if var s = p.session, let until = s.previousUntil, now >= until {
                s.previous = nil
                s.previousUntil = nil
                p.session = s
                peers[id] = p
                out.append(.install(id, accept: [s.key], seal: s.sealing ? s.key : nil))
            }
            guard offers(to: id), let due = p.due, now >= due else { continue }
            if reachable.contains(id) {
                // An unanswered offer again, or a renewal.
                out += offer(to: id, now: now)
            } else {
                // Not reachable now: look again later (never a deadline left in the past).
                peers[id]?.due = now + configuration.retryInterval
            }
        }
        return out
    }

    /// When ``onTick(now:reachable:)`` next has work: an offer or renewal due, a replaced key to drop.
    public var nextDeadline: LocalTime? {
        var d: [LocalTime] = []
        for p in peers.values {
            if let due = p.due { d.append(due) }
            if let u = p.session?.previousUntil { d.append(u) }
        }
        return d.min()
    }

    /// HKDF-SHA256(ikm = X25519(ephemerals), salt = the pair's key, info = "lockstep session v1" ‖
    /// lower id ‖ higher id ‖ lower's ephemeral ‖ higher's ephemeral), as a key of the session epoch.
    static func sessionKey(mine: Curve25519.KeyAgreement.PrivateKey, theirs: Curve25519.KeyAgreement.PublicKey, myID: PeerID, theirID: PeerID, pairKey: GroupKey) -> GroupKey? {
        guard let shared = try? mine.sharedSecretFromKeyAgreement(with: theirs) else { return nil }
        let raw = shared.withUnsafeBytes { Array($0) }
        guard raw.contains(where: { $0 != 0 }) else { return nil }
        let myE = Array(mine.publicKey.rawRepresentation), theirE = Array(theirs.rawRepresentation)
        let (lo, hi, loE, hiE) = myID < theirID ? (myID, theirID, myE, theirE) : (theirID, myID, theirE, myE)
        let info = Array("lockstep session v1".utf8) + lo.bytes + hi.bytes + loE + hiE
        let key = HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: raw), salt: pairKey.bytes, info: info, outputByteCount: 32)
        return GroupKey(bytes: key.withUnsafeBytes { Array($0) }, epoch: GroupKey.sessionEpoch)
    }
}
