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
/// answers (`session_answer`, its own and the offer's); both sealed pairwise. The offerer offers
/// when it first hears the peer, when the peer's incarnation changes, when a datagram the peer
/// sealed under a session does not open, when its new key goes unconfirmed while the peer is
/// heard under another, and to renew. (Not while the peer is silent: in a group of 64, where most
/// pairs exchange a datagram every few seconds at most, offers every 3 s pushed out of the
/// offerer's pending keys the one the answerer had taken up, and its next datagrams failed to
/// open: at 47 of 64 agents, up to 197 at one in 50 s, commands among them.)
///
/// Keys, as WireGuard keeps them: a key agreed is *pending* until the peer is heard sealing under
/// it. The offerer seals under a new key once the answer arrives (the answer proves the answerer
/// holds it); the answerer only once a datagram under it has arrived (the offerer holds it, so
/// its answer got through). Until then each side keeps sealing under, and opening, the key it had:
/// an offer, however often repeated, never takes away the key both sides use. (A member forging
/// another's id on a group-key datagram makes the offerer offer again, and its answers could be
/// lost while the forged incarnation shuts out the real one; when every new offer replaced the
/// answerer's working key, the two were cut apart for seconds: the malicious-member lab scenario.)
/// The key a confirmed one replaced is opened ``Configuration/previousLife`` more (reordering).
/// A peer heard under another incarnation on a group-key datagram may have restarted and hold
/// none of our keys: until it is heard under a session, what goes to it is sealed under the group
/// key, so a restarted agent hears the group at once, as without sessions (in the kill lab
/// scenario it heard the group late, and its player's load reset the group's timeline).
///
/// A pure instance: inputs are `on…` calls with the current time, outputs ``Directive``s.
/// (Ephemeral keys are drawn inside, from the system's generator.)
public struct PairSessions: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// An unanswered offer is sent again this often; offers to one peer are never more frequent.
        public var retryInterval: TimeSpan = .milliseconds(500)
        /// The offerer offers again if the answerer, heard since the answer, has not sealed
        /// under the new key within this.
        public var confirmTimeout: TimeSpan = .seconds(3)
        /// A session is replaced by a new one this often (by the offerer).
        public var rekeyInterval: TimeSpan = .seconds(120)
        /// The key a confirmed new one replaced is still opened this long.
        public var previousLife: TimeSpan = .seconds(10)

        public init() {}
    }

    /// Keys agreed and not yet heard used, kept per peer (newest first): a repeated offer whose
    /// answers crossed, or arrived out of order, still finds its key.
    public static let maxPending = 2

    public enum Directive: Sendable, Equatable {
        /// Send to the peer, sealed under the key this device shares with it (pairwise).
        case send(PeerMessage, to: PeerID)
        /// Open the peer's session-sealed datagrams with these keys (none: it has no session),
        /// and seal what goes to it under `seal` (nil: under the group key).
        case install(PeerID, accept: [GroupKey], seal: GroupKey?)
    }

    /// What the transport was told for a peer.
    struct Installed: Equatable {
        var accept: [GroupKey]
        var seal: GroupKey?
    }

    struct Offer: Sendable {
        var ephemeral: Curve25519.KeyAgreement.PrivateKey
        var sentAt: LocalTime
    }

    struct Peer: Sendable {
        /// The incarnation last heard (nil: not heard yet).
        var incarnation: UInt64?
        /// The key this device seals under (nil: the group key), and since when (for renewals).
        var seal: GroupKey?
        var sealSince: LocalTime?
        /// The newest key the peer has been heard sealing under.
        var heard: GroupKey?
        /// Keys agreed that the peer has not been heard using yet, newest first.
        var pending: [GroupKey] = []
        /// The heard key a newer one replaced, opened until `replacedUntil`.
        var replaced: GroupKey?
        var replacedUntil: LocalTime?
        /// The offerer's offer waiting for its answer, and when it last offered.
        var offer: Offer?
        var lastOffer: LocalTime?
        /// The offerer's next offer (again, renewal or asked for); nil: none planned.
        var due: LocalTime?
        /// The offerer's new key unconfirmed: looked at again at this time.
        var confirmBy: LocalTime?
        /// Since the answer, the peer was heard under a key other than the newest (or the group
        /// key): it has not taken the newest up.
        var heardOtherSinceAnswer = false
        /// Heard under another incarnation and not under a session since: it may have restarted
        /// and hold none of our keys, so what goes to it is sealed under the group key.
        var mayHaveRestarted = false

        /// What this device seals under now (nil: the group key).
        var sealing: GroupKey? { mayHaveRestarted ? nil : seal }
        var installed: Installed { Installed(accept: accept, seal: sealing) }

        var accept: [GroupKey] {
            var keys: [GroupKey] = []
            for k in [heard].compactMap({ $0 }) + pending + [replaced].compactMap({ $0 }) where !keys.contains(k) { keys.append(k) }
            return keys
        }
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
        guard let p = peers[peer] else { return ([], nil) }
        return (p.accept, p.sealing)
    }

    /// Whether `peer` has been heard sealing under a session with this device (it holds one).
    public func isConfirmed(_ peer: PeerID) -> Bool { peers[peer]?.heard != nil }

    public var peersWithSessions: [PeerID] { peers.keys.filter { !(peers[$0]?.accept.isEmpty ?? true) }.sorted() }

    // MARK: - Inputs

    /// An authenticated datagram from member `peer` (incarnation `incarnation`), opened with
    /// `sessionKey` if it was sealed under a session. `pairKey` is the key shared with it (nil:
    /// not a member, nothing to do). The offerer offers to a peer heard for the first time or
    /// under another incarnation (it restarted, or a member forged its id: either way nothing
    /// in place ends); a pending key the peer sealed under is confirmed.
    public mutating func onHeard(_ peer: PeerID, incarnation: UInt64, sessionKey: GroupKey?, pairKey: GroupKey?, now: LocalTime) -> [Directive] {
        guard peer != me, pairKey != nil else { return [] }
        var p = peers[peer] ?? Peer()
        let before = p.installed
        var out: [Directive] = []
        if p.incarnation != incarnation {
            // A new start of the peer, or a member forging its id on a group-key datagram. A
            // restarted peer holds none of our keys: until it is heard under a session (which
            // only the start that shares our keys can do: the real one at once, if this was
            // forged), what goes to it is sealed under the group key, so that it hears the group
            // at once, as it would without sessions. Nothing is dropped; the offerer offers.
            if p.incarnation != nil, sessionKey == nil { p.mayHaveRestarted = true }
            p.incarnation = incarnation
            if offers(to: peer) { out += askOffer(to: peer, &p, now: now) }
        }
        if sessionKey != nil { p.mayHaveRestarted = false }
        if let k = sessionKey, let i = p.pending.firstIndex(of: k) {
            // The peer holds `k` and seals under it: it is confirmed, older pending ones go.
            if let h = p.heard, h != k {
                p.replaced = h
                p.replacedUntil = now + configuration.previousLife
            }
            p.heard = k
            p.pending = Array(p.pending[..<i])
            if !offers(to: peer) {
                p.seal = k
                p.sealSince = now
            } else if p.seal == k {
                p.due = (p.sealSince ?? now) + configuration.rekeyInterval
                p.confirmBy = nil
            }
        }
        if offers(to: peer), p.confirmBy != nil, sessionKey != p.seal { p.heardOtherSinceAnswer = true }
        return store(p, for: peer, before: before, then: out)
    }

    /// A datagram member `peer` sealed under a session that no key held for it opens (this device
    /// restarted, or lost the key): the offerer offers (at most once a ``Configuration/retryInterval``).
    public mutating func onUndecryptable(_ peer: PeerID, pairKey: GroupKey?, now: LocalTime) -> [Directive] {
        guard peer != me, pairKey != nil, offers(to: peer) else { return [] }
        var p = peers[peer] ?? Peer()
        let before = p.installed
        let out = askOffer(to: peer, &p, now: now)
        return store(p, for: peer, before: before, then: out)
    }

    /// A `session_offer` from `peer`, which arrived sealed pairwise if `pairwise`, under `pairKey`:
    /// its key is pending; this device keeps sealing under the one it had.
    public mutating func onOffer(_ ephemeral: [UInt8], from peer: PeerID, incarnation: UInt64, pairwise: Bool, pairKey: GroupKey?, now: LocalTime) -> [Directive] {
        guard pairwise, let pairKey, peer != me, !offers(to: peer), let theirs = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: ephemeral) else { return [] }
        let e = Curve25519.KeyAgreement.PrivateKey()
        guard let key = Self.sessionKey(mine: e, theirs: theirs, myID: me, theirID: peer, pairKey: pairKey) else { return [] }
        // The key goes in before the answer goes out: the offerer seals under it once answered.
        var p = peers[peer] ?? Peer()
        let before = p.installed
        p.incarnation = incarnation
        p.pending = Array(([key] + p.pending).prefix(Self.maxPending))
        return store(p, for: peer, before: before, then: [.send(.sessionAnswer(ephemeral: Array(e.publicKey.rawRepresentation), offer: ephemeral), to: peer)])
    }

    /// A `session_answer` from `peer` to this device's offer: the offerer seals under the new key
    /// at once, and keeps opening what the answerer seals under until it moves to the new one.
    public mutating func onAnswer(_ ephemeral: [UInt8], offer: [UInt8], from peer: PeerID, pairwise: Bool, pairKey: GroupKey?, now: LocalTime) -> [Directive] {
        guard pairwise, let pairKey, var p = peers[peer], let o = p.offer, Array(o.ephemeral.publicKey.rawRepresentation) == offer,
              let theirs = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: ephemeral),
              let key = Self.sessionKey(mine: o.ephemeral, theirs: theirs, myID: me, theirID: peer, pairKey: pairKey) else { return [] }
        let before = p.installed
        p.seal = key
        p.sealSince = now
        p.pending = Array(([key] + p.pending).prefix(Self.maxPending))
        p.offer = nil
        p.mayHaveRestarted = false
        p.due = nil
        p.confirmBy = now + configuration.confirmTimeout
        p.heardOtherSinceAnswer = false
        return store(p, for: peer, before: before, then: [])
    }

    /// `peer` left the group or is forgotten: its session goes.
    public mutating func onGone(_ peer: PeerID) -> [Directive] {
        guard let p = peers.removeValue(forKey: peer), p.installed != Peer().installed else { return [] }
        return [.install(peer, accept: [], seal: nil)]
    }

    /// This device switched groups: every session and offer goes.
    public mutating func onReset() -> [Directive] {
        peers.keys.sorted().flatMap { onGone($0) }
    }

    /// Time passes: offers due are made (to `reachable` peers; the others are looked at again
    /// later), replaced keys dropped.
    public mutating func onTick(now: LocalTime, reachable: Set<PeerID>) -> [Directive] {
        var out: [Directive] = []
        for id in peers.keys.sorted() {
            guard var p = peers[id] else { continue }
            let before = p.installed
            var sent: [Directive] = []
            if let until = p.replacedUntil, now >= until {
                p.replaced = nil
                p.replacedUntil = nil
            }
            if offers(to: id), let by = p.confirmBy, now >= by {
                // Heard under another key since the answer: the new one did not get through.
                // Silent: nothing shows either way, and an offer would only churn its keys.
                // (The last offer came before the answer, a timeout ago: no retry interval to wait.)
                p.confirmBy = now + configuration.confirmTimeout
                if p.heardOtherSinceAnswer { p.due = now }
            }
            if offers(to: id), let due = p.due, now >= due {
                if reachable.contains(id) {
                    sent = offer(to: id, &p, now: now)
                } else {
                    // Not reachable now: look again later (never a deadline left in the past).
                    p.due = now + configuration.retryInterval
                }
            }
            out += store(p, for: id, before: before, then: sent)
        }
        return out
    }

    /// When ``onTick(now:reachable:)`` next has work: an offer due, a new key to look at, a
    /// replaced key to drop.
    public var nextDeadline: LocalTime? {
        // A loop, not flatMap and min: the agent asks after every datagram, and the arrays those
        // built were 1 % of an idle agent's CPU at 8 hosts.
        var next: LocalTime?
        func consider(_ t: LocalTime?) {
            if let t, next.map({ t < $0 }) ?? true { next = t }
        }
        for p in peers.values {
            consider(p.due)
            consider(p.confirmBy)
            consider(p.replacedUntil)
        }
        return next
    }

    // MARK: - Internals

    /// Keeps `p` as `peer`'s state: an ``Directive/install`` first if its keys differ from
    /// `before`, then `sent`.
    private mutating func store(_ p: Peer, for peer: PeerID, before: Installed, then sent: [Directive]) -> [Directive] {
        peers[peer] = p
        return (p.installed == before ? [] : [.install(peer, accept: p.accept, seal: p.sealing)]) + sent
    }

    /// An offer now, or as soon as one is allowed (one a ``Configuration/retryInterval``).
    private func askOffer(to peer: PeerID, _ p: inout Peer, now: LocalTime) -> [Directive] {
        let earliest = p.lastOffer.map { $0 + configuration.retryInterval } ?? now
        if earliest <= now { return offer(to: peer, &p, now: now) }
        p.due = min(p.due ?? earliest, earliest)
        return []
    }

    private func offer(to peer: PeerID, _ p: inout Peer, now: LocalTime) -> [Directive] {
        let e = Curve25519.KeyAgreement.PrivateKey()
        p.offer = Offer(ephemeral: e, sentAt: now)
        p.lastOffer = now
        p.due = now + configuration.retryInterval
        p.confirmBy = nil
        return [.send(.sessionOffer(ephemeral: Array(e.publicKey.rawRepresentation)), to: peer)]
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
