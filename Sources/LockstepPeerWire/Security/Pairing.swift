import Crypto
import LockstepCore

/// Pairing a new device with a short code (`Protocol/peer-protocol.md` §2.4): `lockstep group
/// invite` on a member shows 8 digits; `lockstep group join 1234-5678` on the new device runs
/// SPAKE2 with the inviting agent over the LAN. Both sides then hold a key that only the two of
/// them have, and only if both used the same code; over it the joiner gives its device key and
/// name, and the inviter gives the group (id, epoch, key) and admits the joiner to the roster.
///
/// What the code is worth to others: nothing after use (one-time; the session keys come from the
/// exchange, not from the code), nothing offline (SPAKE2 gives an attacker no way to test codes
/// against a captured exchange), and one guess per exchange online: every exchange spends one of
/// the invite's attempts (uses + ``Configuration/spareAttempts``), so an attacker who guesses has
/// at most 5 chances in 10⁸ before the invite closes; and it expires after
/// ``Configuration/inviteLife``.
///
/// A pure instance: inputs are `on…` calls with the current time, outputs ``Directive``s.
/// (SPAKE2 draws its own randomness inside BoringSSL.)
public struct Pairing: Sendable {
    public struct Configuration: Sendable, Equatable {
        public var inviteLife: TimeSpan = .seconds(600)
        /// Exchanges an invite allows beyond its uses: typos, and an attacker's guesses.
        public var spareAttempts = 5
        /// An inviter forgets an exchange this long after it began.
        public var sessionLife: TimeSpan = .seconds(20)
        public var maxSessions = 16
        /// A joiner sends again what was not answered this often…
        public var retryInterval: TimeSpan = .milliseconds(300)
        /// …and gives up after this long.
        public var joinTimeout: TimeSpan = .seconds(15)
        /// Devices a joiner tries at once.
        public var maxCandidates = 16

        public init() {}
    }

    /// An open invitation on this agent.
    public struct Invite: Sendable, Equatable {
        /// 8 digits.
        public let code: String
        public let expires: LocalTime
        public internal(set) var usesLeft: Int
        public internal(set) var attemptsLeft: Int
    }

    public enum Directive: Sendable, Equatable {
        case send(PairingMessage, to: Endpoint)
        /// Inviter: the device with this key, named so, paired: admit it to the roster.
        case admit(MemberKey, name: String)
        /// Joiner: the group to switch to.
        case joined(GroupIdentity)
        /// Joiner: pairing failed, for this reason (one line for the person joining).
        case joinFailed(String)
        /// The invite opened or closed (the agent advertises an open invite over DNS-SD).
        case inviteOpen(Bool)
        /// A pairing datagram refused (counted as `pairing_…`).
        case refused(String, from: Endpoint)
    }

    struct InviterSession: Sendable {
        var source: Endpoint
        var reply: PairingMessage
        var keys: SessionKeys
        var began: LocalTime
        var welcome: PairingMessage?
    }

    struct SessionKeys: Sendable, Equatable {
        var inviterConfirm: [UInt8]
        var joinerConfirm: [UInt8]
        var seal: SymmetricKey

        static func == (a: SessionKeys, b: SessionKeys) -> Bool { a.inviterConfirm == b.inviterConfirm && a.joinerConfirm == b.joinerConfirm }
    }

    struct Attempt: Sendable {
        var session: UInt64
        var exchange: SPAKE2Exchange
        var message: [UInt8]
        var lastSent: LocalTime
        var finish: PairingMessage?
        var keys: SessionKeys?
    }

    struct Joining: Sendable {
        var code: [UInt8]
        var groupName: String?
        var me: MemberKey
        var name: String
        var deadline: LocalTime
        var attempts: [Endpoint: Attempt] = [:]
        var wrongCode = 0
        var closed = 0
        var nextSession: UInt64
    }

    public let configuration: Configuration
    public private(set) var invite: Invite?
    private var sessions: [UInt64: InviterSession] = [:]
    private var joining: Joining?

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    public var isJoining: Bool { joining != nil }

    /// The code as typed: 8 digits, with any dashes or spaces; nil if it is not one.
    public static func normalize(_ code: String) -> String? {
        let digits = code.filter { $0 != "-" && $0 != " " }
        guard digits.count == 8, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return digits
    }

    /// A new code: 8 uniformly random digits (26.6 bits).
    public static func newCode() -> String {
        var g = SystemRandomNumberGenerator()
        return String((0..<8).map { _ in Character(String(Int.random(in: 0...9, using: &g))) })
    }

    /// How a code is shown: `1234-5678`.
    public static func display(_ code: String) -> String {
        code.count == 8 ? String(code.prefix(4)) + "-" + String(code.suffix(4)) : code
    }

    // MARK: - Inviter

    /// Opens an invite for `uses` devices with `code` (8 digits), replacing any open one.
    public mutating func onInvite(code: String, uses: Int, now: LocalTime) -> [Directive] {
        let uses = min(max(uses, 1), 64)
        invite = Invite(code: code, expires: now + configuration.inviteLife, usesLeft: uses, attemptsLeft: uses + configuration.spareAttempts)
        sessions = [:]
        return [.inviteOpen(true)]
    }

    /// Closes the open invite, if any.
    public mutating func onCloseInvite() -> [Directive] {
        guard invite != nil else { return [] }
        invite = nil
        return [.inviteOpen(false)]
    }

    // MARK: - Joiner

    /// Starts joining with `code`: the agent then gives the devices to try (``onCandidates``).
    /// `session` is a random number drawn by the agent (the ids of the exchanges follow it).
    public mutating func onJoin(code: String, groupName: String?, me: MemberKey, name: String, session: UInt64, now: LocalTime) -> [Directive] {
        guard let digits = Self.normalize(code) else { return [.joinFailed("a pairing code is 8 digits, such as 1234-5678")] }
        joining = Joining(code: Array(digits.utf8), groupName: groupName, me: me, name: name, deadline: now + configuration.joinTimeout, nextSession: session)
        return []
    }

    /// The devices that may be inviting (DNS-SD shows an open invite, or configured peers): each
    /// new one is sent a start.
    public mutating func onCandidates(_ endpoints: [Endpoint], now: LocalTime) -> [Directive] {
        guard var j = joining else { return [] }
        var out: [Directive] = []
        for e in endpoints where j.attempts[e] == nil && j.attempts.count < configuration.maxCandidates {
            guard let exchange = SPAKE2Exchange(role: .joiner), let message = exchange.message(password: j.code) else { continue }
            j.nextSession &+= 1
            let attempt = Attempt(session: j.nextSession, exchange: exchange, message: message, lastSent: now)
            j.attempts[e] = attempt
            out.append(.send(.start(session: attempt.session, spake: message), to: e))
        }
        joining = j
        return out
    }

    // MARK: - Both

    /// A pairing datagram from `source`. The inviter welcomes with `group`.
    public mutating func onMessage(_ message: PairingMessage, from source: Endpoint, group: GroupIdentity, now: LocalTime) -> [Directive] {
        switch message {
        case .start(let session, let spake):
            return onStart(session: session, spake: spake, from: source, now: now)
        case .finish(let session, let confirm, let sealed):
            return onFinish(session: session, confirm: confirm, sealed: sealed, from: source, group: group, now: now)
        case .reply(let session, let spake, let confirm):
            return onReply(session: session, spake: spake, confirm: confirm, from: source, now: now)
        case .welcome(let session, let sealed):
            return onWelcome(session: session, sealed: sealed, from: source)
        case .refused(let session, let reason):
            guard var j = joining, let a = j.attempts[source], a.session == session, a.keys == nil else { return [] }
            if reason == .inviteClosed { j.closed += 1 }
            j.attempts[source]?.lastSent = .distantFuture
            joining = j
            return failIfAllAnswered()
        }
    }

    private mutating func onStart(session: UInt64, spake: [UInt8], from source: Endpoint, now: LocalTime) -> [Directive] {
        if let s = sessions[session], s.source == source { return [.send(s.reply, to: source)] }
        guard var inv = invite, now < inv.expires else {
            if invite != nil { invite = nil }
            return [.send(.refused(session: session, reason: .noInvite), to: source), .refused("pairing_no_invite", from: source)]
        }
        guard inv.attemptsLeft > 0, inv.usesLeft > 0 else {
            return [.send(.refused(session: session, reason: .inviteClosed), to: source), .refused("pairing_invite_closed", from: source)]
        }
        inv.attemptsLeft -= 1
        invite = inv
        var out: [Directive] = []
        guard let exchange = SPAKE2Exchange(role: .inviter), let mine = exchange.message(password: Array(inv.code.utf8)),
              let k = exchange.key(from: spake) else {
            return [.refused("pairing_invalid", from: source)] + closeIfSpent()
        }
        let keys = Self.keys(k, session: session, joiner: spake, inviter: mine)
        let reply = PairingMessage.reply(session: session, spake: mine, confirm: keys.inviterConfirm)
        if sessions.count >= configuration.maxSessions, let oldest = sessions.min(by: { $0.value.began < $1.value.began })?.key {
            sessions[oldest] = nil
        }
        sessions[session] = InviterSession(source: source, reply: reply, keys: keys, began: now)
        out.append(.send(reply, to: source))
        return out + closeIfSpent()
    }

    private mutating func closeIfSpent() -> [Directive] {
        guard let inv = invite, inv.attemptsLeft <= 0 || inv.usesLeft <= 0 else { return [] }
        invite = nil
        return [.inviteOpen(false)]
    }

    private mutating func onFinish(session: UInt64, confirm: [UInt8], sealed: [UInt8], from source: Endpoint, group: GroupIdentity, now: LocalTime) -> [Directive] {
        guard var s = sessions[session], s.source == source else { return [.refused("pairing_unknown_session", from: source)] }
        if let welcome = s.welcome { return [.send(welcome, to: source)] }
        guard confirm == s.keys.joinerConfirm, let plain = Self.open(sealed, key: s.keys.seal, nonce: 1), plain.count >= 33,
              let key = MemberKey(bytes: Array(plain[0..<32])), plain.count == 33 + Int(plain[32]) else {
            sessions[session] = nil
            return [.refused("pairing_wrong_code", from: source)]
        }
        let name = String(decoding: plain[33...], as: UTF8.self)
        var body = group.idBytes
        withUnsafeBytes(of: group.epoch.bigEndian) { body += $0 }
        body += group.key
        let groupName = Array(group.name.utf8.prefix(32))
        body.append(UInt8(groupName.count))
        body += groupName
        let welcome = PairingMessage.welcome(session: session, sealed: Self.seal(body, key: s.keys.seal, nonce: 2))
        s.welcome = welcome
        sessions[session] = s
        if var inv = invite {
            inv.usesLeft -= 1
            invite = inv
        }
        return [.admit(key, name: name), .send(welcome, to: source)] + closeIfSpent()
    }

    private mutating func onReply(session: UInt64, spake: [UInt8], confirm: [UInt8], from source: Endpoint, now: LocalTime) -> [Directive] {
        guard var j = joining, var a = j.attempts[source], a.session == session else { return [] }
        if let finish = a.finish { return [.send(finish, to: source)] }
        guard let k = a.exchange.key(from: spake) else { return [.refused("pairing_invalid", from: source)] }
        let keys = Self.keys(k, session: session, joiner: a.message, inviter: spake)
        guard confirm == keys.inviterConfirm else {
            // Another code (another inviting device, or a typo): this device is done with it.
            j.wrongCode += 1
            a.lastSent = .distantFuture
            j.attempts[source] = a
            joining = j
            return failIfAllAnswered()
        }
        let name = Array(j.name.utf8.prefix(PeerMessage.maxNameBytes))
        let body = j.me.bytes + [UInt8(name.count)] + name
        let finish = PairingMessage.finish(session: session, confirm: keys.joinerConfirm, sealed: Self.seal(body, key: keys.seal, nonce: 1))
        a.keys = keys
        a.finish = finish
        a.lastSent = now
        j.attempts[source] = a
        joining = j
        return [.send(finish, to: source)]
    }

    private mutating func onWelcome(session: UInt64, sealed: [UInt8], from source: Endpoint) -> [Directive] {
        guard let j = joining, let a = j.attempts[source], a.session == session, let keys = a.keys,
              let plain = Self.open(sealed, key: keys.seal, nonce: 2), plain.count >= 16 + 4 + 32 + 1,
              plain.count == 53 + Int(plain[52]) else { return [] }
        let id = Array(plain[0..<16])
        let epoch = plain[16..<20].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard GroupKey.isGroupEpoch(epoch), GroupKey.nextEpoch(after: epoch) != nil,
              let key = GroupKey(bytes: Array(plain[20..<52]), epoch: epoch) else {
            return [.refused("pairing_invalid", from: source)]
        }
        let sent = String(decoding: plain[53...], as: UTF8.self)
        let name = j.groupName ?? (GroupIdentity.isValidName(sent) ? sent : "default")
        joining = nil
        return [.joined(GroupIdentity(name: name, key: key, groupID: id))]
    }

    /// Every device tried has answered no: the joiner need not wait for the timeout.
    private mutating func failIfAllAnswered() -> [Directive] {
        guard let j = joining, !j.attempts.isEmpty, j.attempts.values.allSatisfy({ $0.lastSent == .distantFuture }) else { return [] }
        joining = nil
        return [.joinFailed(Self.failure(j))]
    }

    private static func failure(_ j: Joining) -> String {
        if j.attempts.isEmpty { return "no device is inviting: run 'lockstep group invite' on a member of the group (on this network)" }
        if j.wrongCode > 0 { return "the code matches no inviting device: check it, or make a new one (lockstep group invite)" }
        if j.closed > 0 { return "the invite is used up or expired: make a new one (lockstep group invite)" }
        return "no inviting device answered"
    }


    /// Time passes: the joiner sends again what was not answered, or gives up; the inviter
    /// forgets old exchanges and closes an expired invite.
    public mutating func onTick(now: LocalTime) -> [Directive] {
        var out: [Directive] = []
        sessions = sessions.filter { now - $0.value.began < configuration.sessionLife }
        if let inv = invite, now >= inv.expires {
            invite = nil
            out.append(.inviteOpen(false))
        }
        guard var j = joining else { return out }
        if now >= j.deadline {
            joining = nil
            return out + [.joinFailed(Self.failure(j))]
        }
        for (e, a) in j.attempts where a.lastSent != .distantFuture && now - a.lastSent >= configuration.retryInterval {
            j.attempts[e]?.lastSent = now
            out.append(.send(a.finish ?? .start(session: a.session, spake: a.message), to: e))
        }
        joining = j
        return out
    }

    public var nextDeadline: LocalTime? {
        var d: [LocalTime] = []
        if let inv = invite { d.append(inv.expires) }
        if let j = joining {
            d.append(j.deadline)
            for a in j.attempts.values where a.lastSent != .distantFuture { d.append(a.lastSent + configuration.retryInterval) }
        }
        if let oldest = sessions.values.map(\.began).min() { d.append(oldest + configuration.sessionLife) }
        return d.min()
    }

    // MARK: - Keys

    /// HKDF-SHA256 over SPAKE2's key, salted with the session id, bound to both messages:
    /// the two confirmation keys and the sealing key.
    static func keys(_ k: [UInt8], session: UInt64, joiner: [UInt8], inviter: [UInt8]) -> SessionKeys {
        var salt: [UInt8] = []
        withUnsafeBytes(of: session.bigEndian) { salt += $0 }
        let info = Array("lockstep pairing v1".utf8) + joiner + inviter
        let okm = HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: k), salt: salt, info: info, outputByteCount: 96).withUnsafeBytes { Array($0) }
        let confirmI = Array(HMAC<SHA256>.authenticationCode(for: Array("inviter".utf8), using: SymmetricKey(data: okm[0..<32])))
        let confirmJ = Array(HMAC<SHA256>.authenticationCode(for: Array("joiner".utf8), using: SymmetricKey(data: okm[32..<64])))
        return SessionKeys(inviterConfirm: confirmI, joinerConfirm: confirmJ, seal: SymmetricKey(data: okm[64..<96]))
    }

    static func nonce(_ n: UInt8) -> ChaChaPoly.Nonce {
        try! ChaChaPoly.Nonce(data: [UInt8](repeating: 0, count: 11) + [n])
    }

    static func seal(_ body: [UInt8], key: SymmetricKey, nonce: UInt8) -> [UInt8] {
        let box = try! ChaChaPoly.seal(body, using: key, nonce: Self.nonce(nonce))
        return Array(box.ciphertext) + Array(box.tag)
    }

    static func open(_ sealed: [UInt8], key: SymmetricKey, nonce: UInt8) -> [UInt8]? {
        guard sealed.count >= 16, let box = try? ChaChaPoly.SealedBox(nonce: Self.nonce(nonce), ciphertext: sealed.dropLast(16), tag: sealed.suffix(16)) else { return nil }
        return (try? ChaChaPoly.open(box, using: key)).map { Array($0) }
    }
}
