/// Which source addresses have shown that they are where a peer really is (return routability,
/// as QUIC's address validation, RFC 9000 §8).
///
/// A datagram's source address proves nothing: a member holding the key can put any address
/// there and make this node send to it. An address counts as *validated* when discovery gave it
/// (a DNS-SD or configured path of a peer: ``isVouched(_:by:)``), or when a clock reply arrived
/// from it echoing a `t1` this node sent *to that address* (a challenge: whoever answers saw our
/// request, so the address receives what is sent to it). Until then the shell keeps what it sends
/// there within a ``ReplyBudget``.
///
/// Both tables are bounded whatever senders claim: challenges are only recorded for requests this
/// node chose to send, and the oldest entries give way first.
public struct PathValidation: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// Addresses with outstanding challenges, at most.
        public var maxChallenged: Int = 512
        /// Outstanding challenges per address (the latest ones).
        public var challengesPerAddress: Int = 4
        /// Validated addresses remembered, at most (the least recently confirmed are forgotten).
        public var maxValidated: Int = 512
        /// A validated address not confirmed again for this long must be validated again. A
        /// reachable peer's address is challenged again once it is half this old
        /// (``dueRevalidations(of:isVouched:now:)``), looked for every twentieth of it.
        public var validFor: TimeSpan = .seconds(600)

        public init() {}
    }

    public let configuration: Configuration
    /// `t1`s sent to each address and not answered yet, with when the latest was sent.
    public private(set) var challenges: [Endpoint: (t1s: [Int64], at: LocalTime)] = [:]
    /// Addresses that answered a challenge, and when they last did.
    public private(set) var validated: [Endpoint: LocalTime] = [:]
    /// When ``dueRevalidations(of:isVouched:now:)`` last looked.
    public private(set) var revalidationsCheckedAt: LocalTime?
    /// Addresses something waits on, and when ``shouldChallenge(_:every:now:)`` last said to
    /// challenge each.
    public private(set) var awaited: [Endpoint: LocalTime] = [:]

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    /// A clock request (or probe) carrying `t1` went to `endpoint`.
    public mutating func onChallengeSent(to endpoint: Endpoint, t1: LocalTime) {
        var entry = challenges[endpoint] ?? (t1s: [], at: t1)
        Self.makeRoom(for: endpoint, in: &challenges, limit: configuration.maxChallenged) { $0.at }
        entry.t1s.append(t1.ns)
        if entry.t1s.count > configuration.challengesPerAddress { entry.t1s.removeFirst(entry.t1s.count - configuration.challengesPerAddress) }
        entry.at = t1
        challenges[endpoint] = entry
    }

    /// A clock reply from `endpoint` echoed `echo`: the address is validated if that is a `t1`
    /// sent to it. Returns whether it was.
    @discardableResult
    public mutating func onEcho(_ echo: Int64, from endpoint: Endpoint, now: LocalTime) -> Bool {
        guard var entry = challenges[endpoint], let i = entry.t1s.firstIndex(of: echo) else { return false }
        entry.t1s.remove(at: i)
        challenges[endpoint] = entry.t1s.isEmpty ? nil : entry
        Self.makeRoom(for: endpoint, in: &validated, limit: configuration.maxValidated) { $0 }
        validated[endpoint] = now
        awaited[endpoint] = nil
        return true
    }

    /// Whether to challenge `endpoint` now because something is held back until it is validated
    /// (the group's addresses a peer is owed): at once, then at most every `interval` while it
    /// is not. Clock requests challenge as a side effect, but above 9 devices they go only to the
    /// peers measured, and otherwise such an address would wait for ``dueRevalidations(of:isVouched:now:)``,
    /// looked for only every 30 s. Records the answer; at most ``Configuration/maxChallenged``
    /// addresses are remembered (the oldest give way).
    public mutating func shouldChallenge(_ endpoint: Endpoint, every interval: TimeSpan, now: LocalTime) -> Bool {
        if let last = awaited[endpoint], now >= last, now - last < interval { return false }
        Self.makeRoom(for: endpoint, in: &awaited, limit: configuration.maxChallenged) { $0 }
        awaited[endpoint] = now
        return true
    }

    /// Keeps `table` within `limit` entries when `endpoint` is about to be added: if it is new
    /// and the table is full, the entry with the earliest `time` gives way.
    private static func makeRoom<Value>(for endpoint: Endpoint, in table: inout [Endpoint: Value], limit: Int, time: (Value) -> LocalTime) {
        guard table[endpoint] == nil, table.count >= limit, let oldest = table.min(by: { time($0.value) < time($1.value) })?.key else { return }
        table[oldest] = nil
    }

    /// Whether `endpoint` answered a challenge within ``Configuration/validFor``.
    public func isValidated(_ endpoint: Endpoint, now: LocalTime) -> Bool {
        validated[endpoint].map { now - $0 < configuration.validFor } ?? false
    }

    /// Whether ``dueRevalidations(of:isVouched:now:)`` would look now: every twentieth of
    /// ``Configuration/validFor`` (and at once if the local clock stepped back), so that a
    /// challenge lost is retried and the look costs nothing on the ticks between.
    public func isRevalidationDue(now: LocalTime) -> Bool {
        guard let last = revalidationsCheckedAt, now >= last else { return true }
        return now - last >= configuration.validFor / 20
    }

    /// Of `endpoints` (the addresses this node reaches its reachable peers at), those to challenge
    /// again now: each that answered no challenge for half of ``Configuration/validFor`` (or never
    /// did) and that discovery does not vouch for; none unless ``isRevalidationDue(now:)``. Clock
    /// requests challenge an address as a side effect, but a peer reached through the mesh is sent
    /// none, so without this its address, given by its own datagrams alone, would lapse and hold
    /// what goes to it to the shell's anti-amplification budget.
    public mutating func dueRevalidations(of endpoints: [Endpoint], isVouched: (Endpoint) -> Bool, now: LocalTime) -> [Endpoint] {
        guard isRevalidationDue(now: now) else { return [] }
        revalidationsCheckedAt = now
        let validFor = configuration.validFor
        return endpoints.filter { endpoint in
            let stale = validated[endpoint].map { now - $0 >= validFor / 2 } ?? true
            return stale && !isVouched(endpoint)
        }
    }

    /// Whether discovery vouches for `endpoint`: a peer's DNS-SD or configured path, or a
    /// configured endpoint whose peer is not known yet; or another member's introduction of a
    /// peer never heard (`peer_addresses`), which is only ever probed, for a few seconds
    /// (``StrangerBudget/introducedProbesFor``), as a stranger DNS-SD names is.
    ///
    /// `onceHeard`: whether it will still vouch once a datagram from `endpoint` is handled. An
    /// introduction vouches only until its peer is first heard, so it does not count then.
    public static func isVouched(_ endpoint: Endpoint, by membership: Membership, onceHeard: Bool = false) -> Bool {
        if membership.unidentified[endpoint] != nil { return true }
        return membership.peers.values.contains { p in
            p.paths.contains { $0.endpoint == endpoint && ($0.source != .learned || (!onceHeard && Membership.onlyIntroduced(p))) }
        }
    }
}
