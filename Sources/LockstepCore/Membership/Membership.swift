/// Who the peers are and whether they can be reached: discovered → resolved → reachable → lost.
///
/// Inputs are DNS-SD sightings (from any interface, either address family), static endpoints,
/// and authenticated datagrams. A peer is *discovered* when DNS-SD names it, *resolved* when it
/// has addresses, *reachable* while it answers, and *lost* when DNS-SD withdraws it and it does not
/// answer a last probe, or when it has been silent for `lostAfter`. It comes back when heard again.
///
/// Identity is the peer id, never a host or instance name (avahi renames both on conflicts).
/// A peer seen on several interfaces and families has several paths; one is preferred (the one
/// last heard on, preferring IPv4, then global IPv6, then link-local), and the others take over
/// when it goes quiet. A higher incarnation in a peer's datagrams means it restarted; so does a
/// lower one from a peer that had gone silent (its incarnation file was lost, or the higher one
/// was a member's forgery: the real peer must not be locked out for good).
///
/// It also runs the introductions: a peer that becomes reachable (or restarts) is sent a `hello`
/// asking for its own, again after ``Configuration/firstHelloRetry`` and then every
/// ``Configuration/helloRetry`` until its `hello` (its name)
/// arrives (``dueHellos(now:)``).
public struct Membership: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// Silent this long: lost.
        public var lostAfter: TimeSpan = .seconds(3)
        /// A peer this node does not measure (see ``onIndirect(_:now:)``) is lost when neither heard
        /// nor vouched for this long: two of the clock reports that vouch for it (every 3 s) may
        /// go missing.
        public var vouchedLostAfter: TimeSpan = .seconds(7)
        /// After DNS-SD withdraws the last sighting, wait this long for an answer before calling it lost.
        public var withdrawalGrace: TimeSpan = .milliseconds(400)
        /// A preferred path not heard on for this long gives way to another path heard more
        /// recently. Longer than a steady peer's silences (its clock exchanges come about every
        /// 1–1.25 s), shorter than ``lostAfter``.
        public var pathFailover: TimeSpan = .seconds(2)
        /// Non-preferred paths of a reachable peer are probed this seldom while its preferred path
        /// is heard (their addresses stay checked)…
        public var alternateProbeInterval: TimeSpan = .seconds(10)
        /// …and every ``probeInterval`` once the preferred path has been quiet this long, so that
        /// failover has a path heard more recently to go to before ``pathFailover``.
        public var pathQuiet: TimeSpan = .milliseconds(1_500)
        /// How often unreachable peers' and static endpoints' addresses are probed.
        public var probeInterval: TimeSpan = .milliseconds(500)
        /// A static endpoint that has not answered is probed less and less often: after
        /// ``probeInterval``, then twice the last wait, up to this. Its device, when it starts,
        /// probes this node itself if configured with its address, and a peer that reaches it
        /// and says so (`peer_addresses`) has it probed at once
        /// (``Membership/onIntroduced(_:at:now:)``); so the waits only cost a device that
        /// knows this node's address from no one a few seconds. In a lab of 64 agents started one
        /// after another over 20 s, probing every 0.5 s sent 552 probes per agent to endpoints
        /// not answering yet (165 with these waits), and 440 more on introductions (12 now).
        public var staticProbeCeiling: TimeSpan = .seconds(4)
        /// How often lost peers are probed (a healed partition is noticed within this).
        public var lostProbeInterval: TimeSpan = .milliseconds(500)
        /// Lost peers are forgotten after this long.
        public var forgetAfter: TimeSpan = .seconds(600)
        /// A peer whose `hello` has not arrived is asked again this often.
        public var helloRetry: TimeSpan = .seconds(1)
        /// The first time, it is asked again sooner: a peer met through its own datagrams (before
        /// DNS-SD resolved it, or introduced by another member) has no name but its hello's, and
        /// the first hellos of a pair cross the session being set up and the anti-amplification
        /// budget, which hold back or drop some.
        public var firstHelloRetry: TimeSpan = .milliseconds(200)
        /// At most this many peers are tracked; more are refused (and counted).
        public var maxPeers: Int = 64
        /// At most this many paths per peer.
        public var maxPathsPerPeer: Int = 8
        /// What peers DNS-SD names but that were never heard from may cost.
        public var strangers = StrangerBudget()

        public init() {}
    }

    public enum State: String, Sendable, Codable, CustomStringConvertible {
        case discovered, resolved, reachable, lost
        public var description: String { rawValue }
    }

    /// How a path was learnt.
    public enum PathSource: String, Sendable, Codable {
        case mdns, `static`, learned
    }

    public struct Path: Sendable, Equatable {
        public var endpoint: Endpoint
        public var source: PathSource
        public var lastHeard: LocalTime?
        public var lastProbed: LocalTime?
    }

    /// A DNS-SD sighting: one instance on one interface.
    public struct Sighting: Hashable, Sendable {
        public var instance: String
        public var interfaceIndex: UInt32
        public init(instance: String, interfaceIndex: UInt32) {
            self.instance = instance
            self.interfaceIndex = interfaceIndex
        }
    }

    public struct Peer: Sendable, Equatable {
        public var id: PeerID
        public var name: String
        public var state: State
        /// When `state` last changed.
        public var since: LocalTime
        public var lastHeard: LocalTime?
        /// When a peer that measures it last reported it, in its current incarnation (its
        /// liveness when this node does not measure it itself).
        public var lastVouched: LocalTime?
        /// When this node began to measure it again after reaching it only through others
        /// (it left ``Membership/indirect``): its silence counts from then at the earliest.
        public var measuredSince: LocalTime?
        public var incarnation: UInt64?
        /// The highest incarnation heard in a datagram only the peer itself can seal (pairwise,
        /// or under a session): a member can put any incarnation on a group-key datagram.
        public var provenIncarnation: UInt64?
        public var paths: [Path]
        public var preferred: Endpoint?
        /// What DNS-SD currently shows, per instance and interface.
        public var sightings: [Sighting: [Endpoint]]
        /// Set when DNS-SD withdrew the last sighting: lost at this time unless heard before.
        var withdrawnDeadline: LocalTime?
        var withdrawnAt: LocalTime?
        /// Its `hello` has not arrived yet: ask again at this time.
        var helloDue: LocalTime?
        /// Hellos sent since it last became reachable or restarted, without its own in return.
        var hellosAsked = 0

        /// Discovery vouches for it: DNS-SD shows it, or a configured endpoint leads to it.
        public var vetted: Bool { !sightings.isEmpty || paths.contains { $0.source != .learned } }
    }

    /// What changed, for the node to act on and for `lockstep watch`.
    public enum Event: Sendable, Equatable {
        case stateChanged(PeerID, from: State?, to: State)
        /// The peer restarted (a higher incarnation): its clock and its records start anew.
        case restarted(PeerID, incarnation: UInt64)
        case renamed(PeerID, name: String)
        case forgotten(PeerID)
        /// A new peer was refused because ``Configuration/maxPeers`` are tracked.
        case refused(PeerID)
    }

    public let configuration: Configuration
    public let me: PeerID
    public private(set) var peers: [PeerID: Peer] = [:] {
        didSet { if reachabilityTouched { refreshReachable() } }
    }
    /// The reachable peers, by id, and the same as a set; kept as peers change state, not
    /// worked out when asked: the node reads them at every event, and at 64 peers filtering,
    /// sorting and hashing them each time was a third of what telling the players of an
    /// operation cost (docs/scale.md, twenty-fifth step).
    public private(set) var reachable: [PeerID] = []
    public private(set) var reachableSet: Set<PeerID> = []
    /// Counts the changes of ``reachable``: a reader that kept what it derived from the set
    /// knows when to work it out again.
    public private(set) var reachabilityVersion: UInt64 = 0
    /// A peer became or stopped being reachable, or was removed, since ``reachable`` was
    /// last worked out: done again when the peer is stored.
    private var reachabilityTouched = false
    /// Peers met for the first time or restarted that have not yet been told where this node
    /// reaches its other peers (`peer_addresses`): ``Node`` tells each once its address is
    /// validated (a large message to an address that has not answered a challenge would be held
    /// back by the shell's anti-amplification budget, and lost).
    public private(set) var addressesOwed: Set<PeerID> = []
    /// When a static endpoint whose peer is not known yet is probed: at once, then after
    /// ``Configuration/probeInterval``, then after twice the last wait each time, up to
    /// ``Configuration/staticProbeCeiling``.
    public struct StaticProbe: Sendable, Equatable {
        /// When it was last probed; nil: not yet (due now).
        public var last: LocalTime?
        /// How long after `last` the next probe is due.
        public var wait: TimeSpan

        public init(last: LocalTime? = nil, wait: TimeSpan) {
            self.last = last
            self.wait = wait
        }

        func isDue(at now: LocalTime) -> Bool {
            last.map { now - $0 >= wait } ?? true
        }

        /// When the next probe is due (`now` if it never was probed).
        func due(now: LocalTime) -> LocalTime {
            (last ?? now) + wait
        }

        /// Probed at `now`: the next wait doubles, once the first has passed.
        func probed(at now: LocalTime, ceiling: TimeSpan) -> StaticProbe {
            StaticProbe(last: now, wait: last == nil ? wait : min(wait * Int64(2), max(ceiling, wait)))
        }
    }

    /// Static endpoints whose peer is not known yet, and when each is probed.
    public private(set) var unidentified: [Endpoint: StaticProbe] = [:]
    private var staticEndpoints: Set<Endpoint> = []
    /// Peers this node does not exchange with regularly (a large group's clock mesh reaches them
    /// in two hops): heard from seldom, kept alive by others' reports.
    public private(set) var indirect: Set<PeerID> = []
    /// What DNS-SD showed of strangers that gave way to newcomers, oldest first (see
    /// ``StrangerBudget``): given back to the peer when it reappears.
    private var evicted: [EvictedSightings] = []
    /// Each peer's next deadline (``deadline(of:now:indirect:)``) as ``nextWakeup(now:)`` last
    /// worked it out; not for the peers in ``stale``.
    private var deadlines: [PeerID: LocalTime] = [:]
    /// Peers changed (stored, removed, moved in or out of ``indirect``) since their deadline was
    /// last worked out.
    private var stale: Set<PeerID> = []

    struct EvictedSightings: Sendable {
        var peer: PeerID
        var sightings: [Sighting: [Endpoint]]
    }

    public init(me: PeerID, configuration: Configuration = .init()) {
        self.me = me
        self.configuration = configuration
    }

    // MARK: - Inputs

    /// A DNS-SD sighting of `peer` (already checked to be in our group and not ourselves).
    public mutating func onSighting(_ peer: PeerID, name: String?, sighting: Sighting, endpoints: [Endpoint], now: LocalTime) -> [Event] {
        guard peer != me else { return [] }
        var events: [Event] = []
        guard var p = existingOrNew(peer, authenticated: false, now: now, events: &events) else { return events }
        if let name, !name.isEmpty, p.name != name, p.lastHeard == nil {
            p.name = name
        }
        p.sightings[sighting] = endpoints
        p.withdrawnDeadline = nil
        p.withdrawnAt = nil
        Self.syncDNSPaths(&p, now: now, limit: configuration.maxPathsPerPeer, keepHeardWithin: configuration.lostAfter)
        if p.state == .discovered || (p.state == .lost && p.lastHeard == nil) {
            transition(&p, to: p.paths.isEmpty ? .discovered : .resolved, now: now, events: &events)
        } else if p.state == .lost {
            // Seen again by DNS-SD: probe it (it becomes reachable once it answers).
            for i in p.paths.indices { p.paths[i].lastProbed = nil }
        }
        store(p)
        return events
    }

    /// DNS-SD withdrew an instance on an interface.
    public mutating func onWithdrawal(_ sighting: Sighting, now: LocalTime) -> [Event] {
        guard let id = peers.first(where: { $0.value.sightings[sighting] != nil })?.key, var p = peers[id] else {
            // A stranger that gave way: DNS-SD no longer vouches for it.
            for i in evicted.indices { evicted[i].sightings[sighting] = nil }
            evicted.removeAll { $0.sightings.isEmpty }
            return []
        }
        var events: [Event] = []
        p.sightings[sighting] = nil
        Self.syncDNSPaths(&p, now: now, limit: configuration.maxPathsPerPeer, keepHeardWithin: configuration.lostAfter)
        if p.sightings.isEmpty && p.state != .lost {
            // A rename shows as a withdrawal then a new sighting, and a peer may still answer on
            // another path: give it a moment to answer before calling it lost.
            p.withdrawnDeadline = now + configuration.withdrawalGrace
            p.withdrawnAt = now
            for i in p.paths.indices { p.paths[i].lastProbed = nil }
            if p.state != .reachable { transition(&p, to: .lost, now: now, events: &events) }
        }
        store(p)
        return events
    }

    /// A reachable peer says it reaches `peer` at `endpoint` (its `peer_addresses`, sent when
    /// this node became reachable to it): a peer this node has no path to yet (DNS-SD has not
    /// named or resolved it) gets that one, is resolved, and is probed at once; the returned
    /// endpoint is the probe to send now. It counts as a stranger until it answers
    /// (``StrangerBudget``: a member's word is no better than DNS-SD's, which anyone on the LAN
    /// can publish), probed for ``StrangerBudget/introducedProbesFor`` and then forgotten unless
    /// DNS-SD names it meanwhile. Peers with paths, this node itself and addresses another device
    /// cannot use are left alone.
    public mutating func onIntroduced(_ peer: PeerID, at endpoint: Endpoint, now: LocalTime) -> (events: [Event], probe: Endpoint?) {
        guard peer != me, PeerAddress.isPassable(endpoint) else { return ([], nil) }
        if let probe = unidentified[endpoint] {
            // One of our static endpoints, which a peer now reaches: it is probed on its own
            // schedule, started over (at once, unless probed within the first wait). No
            // introduced entry beside it: every member met tells of it again.
            var restarted = StaticProbe(last: probe.last, wait: configuration.probeInterval)
            let due = restarted.isDue(at: now)
            if due { restarted.last = now }
            unidentified[endpoint] = restarted
            return ([], due ? endpoint : nil)
        }
        if let known = peers[peer], known.state == .reachable || !known.paths.isEmpty { return ([], nil) }
        var events: [Event] = []
        guard var p = existingOrNew(peer, authenticated: false, now: now, events: &events) else { return (events, nil) }
        Self.addPath(endpoint, source: .learned, to: &p, limit: configuration.maxPathsPerPeer)
        guard let i = p.paths.firstIndex(where: { $0.endpoint == endpoint }) else { return (events, nil) }
        p.paths[i].lastProbed = now
        if p.state == .discovered || p.state == .lost { transition(&p, to: .resolved, now: now, events: &events) }
        store(p)
        return (events, endpoint)
    }

    /// Whether `p` is known only from another peer's introduction: never heard, and neither
    /// DNS-SD nor configuration vouches for it.
    static func onlyIntroduced(_ p: Peer) -> Bool {
        p.lastHeard == nil && p.state != .lost && !p.vetted
    }

    /// A static endpoint to contact (its peer id is learnt when it answers).
    public mutating func onStaticEndpoint(_ endpoint: Endpoint) {
        staticEndpoints.insert(endpoint)
        if !peers.values.contains(where: { $0.paths.contains { $0.endpoint == endpoint } }) {
            unidentified[endpoint] = StaticProbe(wait: configuration.probeInterval)
        }
    }

    /// An authenticated datagram from `peer` (incarnation from its envelope) arrived from `endpoint`;
    /// `proven` if only the peer itself could seal it (pairwise, or under a session).
    public mutating func onHeard(_ peer: PeerID, incarnation: UInt64, proven: Bool = false, from endpoint: Endpoint, now: LocalTime) -> [Event] {
        guard peer != me else { return [] }
        var events: [Event] = []
        guard var p = existingOrNew(peer, authenticated: true, now: now, events: &events) else { return events }
        // A higher incarnation is a restart; so is a lower one once the higher one went silent
        // (the peer lost its incarnation file, or the higher one was never the peer's own), or
        // at once when the peer itself proves the lower one and never proved the higher one (a
        // member forged it: with sessions the real peer is never silent meanwhile).
        if let known = p.incarnation,
           incarnation > known || (incarnation < known && (p.state == .lost || (proven && (p.provenIncarnation ?? 0) < known))) {
            events.append(.restarted(peer, incarnation: incarnation))
            // A restarted peer has new ports: what we learned from its old life is stale.
            p.paths.removeAll { $0.source == .learned }
            p.preferred = nil
            p.helloDue = now
            p.hellosAsked = 0
            p.incarnation = incarnation
            addressesOwed.insert(peer)
        }
        if p.incarnation == nil { p.incarnation = incarnation }
        if proven { p.provenIncarnation = max(p.provenIncarnation ?? 0, incarnation) }
        unidentified[endpoint] = nil
        let source: PathSource = staticEndpoints.contains(endpoint) ? .static : .learned
        Self.addPath(endpoint, source: source, to: &p, limit: configuration.maxPathsPerPeer)
        if let i = p.paths.firstIndex(where: { $0.endpoint == endpoint }) { p.paths[i].lastHeard = now }
        p.lastHeard = now
        if let at = p.withdrawnAt, now >= at { p.withdrawnDeadline = nil }
        p.preferred = Self.choosePath(p, now: now, failover: configuration.pathFailover)
        if p.state != .reachable {
            // Met for the first time (not back from lost): it is owed where the others are.
            if p.state != .lost { addressesOwed.insert(peer) }
            transition(&p, to: .reachable, now: now, events: &events)
            p.helloDue = now
            p.hellosAsked = 0
        }
        store(p)
        return events
    }

    /// `peer`'s address answered a challenge for the first time: what went to it before was
    /// held to the shell's anti-amplification budget, hellos included. A hello of ours still
    /// waiting for the peer's is due now (it asks again, with our name); otherwise returns true:
    /// the owner sends ours once more.
    public mutating func onPathValidated(_ peer: PeerID, now: LocalTime) -> Bool {
        guard var p = peers[peer], p.state == .reachable else { return false }
        guard p.helloDue != nil else { return true }
        p.helloDue = now
        store(p)
        return false
    }

    /// The peer was told where this node's other peers are (or is no longer reachable to be).
    public mutating func onAddressesSent(to peer: PeerID) {
        addressesOwed.remove(peer)
    }

    /// Which peers this node does not exchange with regularly: their liveness comes from the peers
    /// that do (``onVouched(_:incarnation:now:)``), within ``Configuration/vouchedLostAfter``,
    /// and their other paths are not probed.
    ///
    /// A reachable peer that leaves the set is given ``Configuration/lostAfter`` from `now` to
    /// be heard on its new link: it was alive on others' word and seldom sent to, so its last
    /// datagram may be older than that, and it would be lost at once (in a group forming, the
    /// grid moves at every arrival: 3 such losses a device, in a simulation of 64 arriving,
    /// each followed by the peer met again, its hello, records and digests).
    public mutating func onIndirect(_ peers: Set<PeerID>, now: LocalTime) {
        for id in indirect.subtracting(peers) {
            guard var p = self.peers[id], p.state == .reachable else { continue }
            p.measuredSince = now
            store(p)
        }
        stale.formUnion(indirect.symmetricDifference(peers))
        indirect = peers
    }

    /// A peer that measures `peer` reported it, in `incarnation`, as reachable (its clock report
    /// names only peers it reaches). A lost peer comes back only when heard itself; an
    /// incarnation other than the one known says nothing (a restart is learnt from the peer).
    public mutating func onVouched(_ peer: PeerID, incarnation: UInt64, now: LocalTime) {
        guard var p = peers[peer], p.state == .reachable, p.incarnation == incarnation else { return }
        p.lastVouched = max(p.lastVouched ?? now, now)
        store(p)
    }

    /// When a reachable `p` is lost unless heard (or vouched for) again; `isIndirect`: `p` is in
    /// ``indirect`` (the caller looks it up once per peer).
    private func silentAt(_ p: Peer, indirect isIndirect: Bool) -> LocalTime? {
        guard let heard = p.lastHeard else { return nil }
        guard isIndirect else { return max(heard, p.measuredSince ?? heard) + configuration.lostAfter }
        return max(heard, p.lastVouched ?? heard) + configuration.vouchedLostAfter
    }

    /// The peer's `hello`: its own name (its introduction is complete).
    public mutating func onHello(_ peer: PeerID, name: String) -> [Event] {
        guard var p = peers[peer] else { return [] }
        p.helloDue = nil
        defer { store(p) }
        guard !name.isEmpty, p.name != name else { return [] }
        p.name = name
        return [.renamed(peer, name: name)]
    }

    /// The peer said goodbye: lost now.
    public mutating func onGoodbye(_ peer: PeerID, now: LocalTime) -> [Event] {
        guard var p = peers[peer], p.state != .lost else { return [] }
        var events: [Event] = []
        transition(&p, to: .lost, now: now, events: &events)
        store(p)
        return events
    }

    /// Time passes: lost detection, path failover, forgetting.
    public mutating func onTick(now: LocalTime) -> [Event] {
        var events: [Event] = []
        for id in peers.keys.sorted() {
            guard var p = peers[id] else { continue }
            if p.state == .reachable {
                let silent = silentAt(p, indirect: indirect.contains(id)).map { now >= $0 } ?? true
                let withdrawn = p.withdrawnDeadline.map { now >= $0 } ?? false
                if silent || withdrawn {
                    p.withdrawnDeadline = nil
                    transition(&p, to: .lost, now: now, events: &events)
                } else {
                    p.preferred = Self.choosePath(p, now: now, failover: configuration.pathFailover)
                }
            } else if Self.onlyIntroduced(p), now - p.since >= configuration.strangers.introducedProbesFor {
                // Introduced, never answered, and no longer probed: nothing else would remove it.
                remove(id)
                events.append(.forgotten(id))
                continue
            } else if p.state == .lost {
                if now - p.since >= configuration.forgetAfter {
                    remove(id)
                    events.append(.forgotten(id))
                    continue
                }
                if let w = p.withdrawnDeadline, now >= w { p.withdrawnDeadline = nil }
            }
            store(p)
        }
        return events
    }

    /// The local clock stepped: times kept are rewritten as "now", so that nothing looks silent
    /// or overdue because of the step.
    public mutating func onLocalClockStep(now: LocalTime) {
        for id in Array(peers.keys) {
            guard var p = peers[id] else { continue }
            p.since = now
            if p.lastHeard != nil { p.lastHeard = now }
            if p.lastVouched != nil { p.lastVouched = now }
            if p.measuredSince != nil { p.measuredSince = now }
            if p.helloDue != nil { p.helloDue = now }
            p.withdrawnDeadline = p.withdrawnDeadline.map { _ in now + configuration.withdrawalGrace }
            p.withdrawnAt = p.withdrawnAt.map { _ in now }
            for i in p.paths.indices {
                if p.paths[i].lastHeard != nil { p.paths[i].lastHeard = now }
                p.paths[i].lastProbed = nil
            }
            store(p)
        }
        for e in Array(unidentified.keys) { unidentified[e] = StaticProbe(wait: configuration.probeInterval) }
    }

    // MARK: - Outputs

    /// Endpoints to probe now (peers not reachable, alternate paths of reachable peers, static
    /// endpoints not identified yet), marking them probed. The preferred path of a reachable peer
    /// is kept alive by the clock exchanges, not by probes.
    public mutating func dueProbes(now: LocalTime) -> [Endpoint] {
        var out: [Endpoint] = []
        for id in peers.keys.sorted() {
            guard var p = peers[id] else { continue }
            var changed = false
            let isIndirect = indirect.contains(id)
            for i in p.paths.indices {
                guard let interval = probeInterval(p, p.paths[i], now: now, indirect: isIndirect) else { continue }
                if p.paths[i].lastProbed.map({ now - $0 >= interval }) ?? true {
                    p.paths[i].lastProbed = now
                    out.append(p.paths[i].endpoint)
                    changed = true
                }
            }
            if changed { store(p) }
        }
        for (endpoint, probe) in unidentified where probe.isDue(at: now) {
            unidentified[endpoint] = probe.probed(at: now, ceiling: configuration.staticProbeCeiling)
            out.append(endpoint)
        }
        return out
    }

    /// Reachable peers whose `hello` is due now (they have not introduced themselves yet),
    /// marking them asked; each is asked again after ``Configuration/helloRetry``.
    public mutating func dueHellos(now: LocalTime) -> [PeerID] {
        // Asked after every datagram: look before sorting and copying peers (at 64 peers that
        // was 4 % of an agent's CPU, and nearly always nothing is due).
        guard peers.values.contains(where: { $0.helloDue.map { $0 <= now } ?? false }) else { return [] }
        var out: [PeerID] = []
        for id in peers.keys.sorted() {
            guard var p = peers[id], let due = p.helloDue, due <= now else { continue }
            guard p.state == .reachable else {
                p.helloDue = nil
                store(p)
                continue
            }
            p.helloDue = now + (p.hellosAsked == 0 ? configuration.firstHelloRetry : configuration.helloRetry)
            p.hellosAsked += 1
            store(p)
            out.append(id)
        }
        return out
    }

    /// How often `path` of `p` is probed; nil if it is not. `isIndirect`: `p` is in ``indirect``
    /// (the caller looks it up once per peer).
    private func probeInterval(_ p: Peer, _ path: Path, now: LocalTime, indirect isIndirect: Bool) -> TimeSpan? {
        switch p.state {
        case .reachable:
            if p.withdrawnDeadline != nil { return configuration.probeInterval }
            // (A peer this node does not measure is seldom sent to: a failover path is not kept warm.)
            guard !isIndirect, path.endpoint != p.preferred else { return nil }
            let preferred = p.paths.first { $0.endpoint == p.preferred }
            let quiet = preferred?.lastHeard.map { now - $0 >= configuration.pathQuiet } ?? true
            return quiet ? configuration.probeInterval : configuration.alternateProbeInterval
        case .discovered, .resolved:
            guard p.lastHeard == nil else { return configuration.probeInterval }
            return configuration.strangers.probeInterval(usual: configuration.probeInterval, age: now - p.since)
        case .lost:
            if p.withdrawnDeadline != nil { return configuration.probeInterval }
            // Withdrawn by DNS-SD and silent: probe only what DNS-SD still shows, what was
            // configured, or what the peer itself used (a healed partition brings that back).
            if !p.sightings.isEmpty || path.source != .mdns { return configuration.lostProbeInterval }
            return nil
        }
    }

    /// The earliest time at which ``onTick(now:)``, ``dueProbes(now:)`` or ``dueHellos(now:)``
    /// has something to do.
    public func nextDeadline(now: LocalTime) -> LocalTime {
        var next = LocalTime.distantFuture
        // (Each peer looked up once in `indirect`: at 64 peers hashing the id for each term was a
        // seventh of this function's time in `scale-sim`.)
        for p in peers.values { next = min(next, deadline(of: p, now: now, indirect: indirect.contains(p.id))) }
        return max(unidentifiedDeadline(now: now, next), now)
    }

    /// ``nextDeadline(now:)`` or a little earlier (a tick then finds nothing due, and stores
    /// every peer: the next call is exact), with each peer's part worked out only after the peer
    /// changed. What the node's timer asks after every event: at 64 peers working out every
    /// peer's silence, hellos, paths and probes each time was 8 % of an idle agent's event loop
    /// (docs/scale.md, twenty-eighth step), and nearly every datagram changes one peer.
    ///
    /// Never later than ``nextDeadline(now:)``: a peer's part, unchanged, only comes later as
    /// time passes (its terms are fixed times, thresholds that drop out once past, and probes
    /// whose interval grows with a stranger's age or shrinks only at a threshold that is itself
    /// a term).
    public mutating func nextWakeup(now: LocalTime) -> LocalTime {
        for id in stale {
            if let p = peers[id] { deadlines[id] = deadline(of: p, now: now, indirect: indirect.contains(id)) } else { deadlines[id] = nil }
        }
        stale.removeAll(keepingCapacity: true)
        return max(unidentifiedDeadline(now: now, deadlines.values.min() ?? .distantFuture), now)
    }

    /// The earlier of `next` and the next probe of a static endpoint whose peer is not known yet.
    private func unidentifiedDeadline(now: LocalTime, _ next: LocalTime) -> LocalTime {
        var next = next
        for probe in unidentified.values { next = min(next, probe.due(now: now)) }
        return next
    }

    /// When `p` next has something due (its silence, withdrawal, hello, a path's quiet or
    /// failover, a probe, being forgotten); `isIndirect`: `p` is in ``indirect``.
    private func deadline(of p: Peer, now: LocalTime, indirect isIndirect: Bool) -> LocalTime {
        var next = LocalTime.distantFuture
        switch p.state {
        case .reachable:
            if let s = silentAt(p, indirect: isIndirect) { next = min(next, s) }
            if let w = p.withdrawnDeadline { next = min(next, w) }
            if let d = p.helloDue { next = min(next, d) }
            // Alternates are probed once the preferred path is quiet, and may take over later.
            if p.paths.count > 1, let heard = p.paths.first(where: { $0.endpoint == p.preferred })?.lastHeard {
                if heard + configuration.pathQuiet > now { next = min(next, heard + configuration.pathQuiet) }
                if heard + configuration.pathFailover > now { next = min(next, heard + configuration.pathFailover) }
            }
        case .lost:
            next = min(next, p.since + configuration.forgetAfter)
            if let w = p.withdrawnDeadline { next = min(next, w) }
        case .discovered, .resolved:
            if Self.onlyIntroduced(p) { next = min(next, p.since + configuration.strangers.introducedProbesFor) }
        }
        for path in p.paths {
            if let interval = probeInterval(p, path, now: now, indirect: isIndirect) { next = min(next, (path.lastProbed ?? now) + interval) }
        }
        return next
    }

    /// Every reachable peer's route, for ``PeerClocks``.
    public var routes: [PeerID: PeerClocks.Route] {
        var out: [PeerID: PeerClocks.Route] = [:]
        for id in peers.keys { out[id] = route(of: id) }
        return out
    }

    /// `peer`'s route if it is reachable.
    public func route(of peer: PeerID) -> PeerClocks.Route? {
        guard let p = peers[peer], p.state == .reachable, let e = endpoint(of: peer) else { return nil }
        return PeerClocks.Route(endpoint: e, incarnation: p.incarnation, vetted: p.vetted)
    }

    public func isReachable(_ peer: PeerID) -> Bool { reachableSet.contains(peer) }

    /// Where to send to `peer`: its preferred path, else the most recently heard, else any.
    public func endpoint(of peer: PeerID) -> Endpoint? {
        guard let p = peers[peer] else { return nil }
        return p.preferred ?? p.paths.max { ($0.lastHeard ?? .distantPast) < ($1.lastHeard ?? .distantPast) }?.endpoint
    }

    // MARK: - Helpers

    private mutating func remove(_ id: PeerID) {
        reachabilityTouched = true
        peers[id] = nil
        stale.insert(id)
    }

    /// Every change of a peer's record goes through here (or ``remove(_:)``): its deadline is
    /// then worked out again.
    private mutating func store(_ p: Peer) {
        peers[p.id] = p
        stale.insert(p.id)
    }

    private mutating func refreshReachable() {
        reachabilityTouched = false
        var ids: [PeerID] = []
        for (id, p) in peers where p.state == .reachable { ids.append(id) }
        ids.sort()
        guard ids != reachable else { return }
        reachable = ids
        reachableSet = Set(ids)
        reachabilityVersion &+= 1
    }

    private mutating func existingOrNew(_ id: PeerID, authenticated: Bool, now: LocalTime, events: inout [Event]) -> Peer? {
        if let p = peers[id] { return p }
        // Strangers (named by DNS-SD, never heard) are few, and the oldest gives way to a newcomer.
        let strangers = peers.values.count { $0.lastHeard == nil }
        if peers.count >= configuration.maxPeers || (!authenticated && strangers >= configuration.strangers.maxUnheard),
            let evictee = StrangerBudget.evictee(among: peers) {
            if let gone = peers[evictee], !gone.sightings.isEmpty {
                evicted.removeAll { $0.peer == evictee }
                evicted.append(EvictedSightings(peer: evictee, sightings: gone.sightings))
                if evicted.count > configuration.strangers.maxRemembered { evicted.removeFirst(evicted.count - configuration.strangers.maxRemembered) }
            }
            remove(evictee)
            events.append(.forgotten(evictee))
        }
        guard peers.count < configuration.maxPeers else {
            events.append(.refused(id))
            return nil
        }
        var p = Peer(id: id, name: id.short, state: .discovered, since: now, lastHeard: nil, incarnation: nil, paths: [], preferred: nil, sightings: [:])
        if let i = evicted.firstIndex(where: { $0.peer == id }) {
            // It gave way as a stranger, and DNS-SD showed it then: it is vouched for as before.
            p.sightings = evicted.remove(at: i).sightings
            Self.syncDNSPaths(&p, now: now, limit: configuration.maxPathsPerPeer, keepHeardWithin: configuration.lostAfter)
        }
        events.append(.stateChanged(id, from: nil, to: .discovered))
        return p
    }

    /// Every state change goes through here (the caller stores `p` afterwards).
    private mutating func transition(_ p: inout Peer, to state: State, now: LocalTime, events: inout [Event]) {
        guard p.state != state else { return }
        if p.state == .reachable || state == .reachable { reachabilityTouched = true }
        events.append(.stateChanged(p.id, from: p.state, to: state))
        p.state = state
        p.since = now
    }

    /// Makes the DNS-SD paths exactly what the current sightings show. A path DNS-SD no longer
    /// shows but the peer still uses stays, as a learned one.
    private static func syncDNSPaths(_ p: inout Peer, now: LocalTime, limit: Int, keepHeardWithin: TimeSpan) {
        let shown = Set(p.sightings.values.joined())
        p.paths.removeAll { path in
            guard path.source == .mdns, !shown.contains(path.endpoint) else { return false }
            return !(path.lastHeard.map { now - $0 < keepHeardWithin } ?? false)
        }
        for i in p.paths.indices where p.paths[i].source == .mdns && !shown.contains(p.paths[i].endpoint) {
            p.paths[i].source = .learned
        }
        if let preferred = p.preferred, !p.paths.contains(where: { $0.endpoint == preferred }) { p.preferred = nil }
        for e in p.sightings.values.joined() { addPath(e, source: .mdns, to: &p, limit: limit) }
    }

    private static func addPath(_ e: Endpoint, source: PathSource, to p: inout Peer, limit: Int) {
        if let i = p.paths.firstIndex(where: { $0.endpoint == e }) {
            // A path known from DNS-SD or configuration keeps that source; learned paths may be upgraded.
            if p.paths[i].source == .learned && source != .learned { p.paths[i].source = source }
            return
        }
        if p.paths.count >= limit {
            // Drop the path heard from longest ago (never heard counts as oldest).
            guard let oldest = p.paths.indices.min(by: { (p.paths[$0].lastHeard ?? .distantPast) < (p.paths[$1].lastHeard ?? .distantPast) }) else { return }
            p.paths.remove(at: oldest)
        }
        p.paths.append(Path(endpoint: e, source: source, lastHeard: nil, lastProbed: nil))
    }

    /// Rank of an address family/scope: lower is better.
    static func rank(_ e: Endpoint) -> Int {
        if e.isLoopback { return 3 }
        if e.isIPv4 { return 0 }
        return e.isLinkLocal ? 2 : 1
    }

    /// Keeps the preferred path while it is heard; otherwise the best-ranked path heard more
    /// recently than it (alternates are probed every few seconds, so they stay fresh).
    static func choosePath(_ p: Peer, now: LocalTime, failover: TimeSpan) -> Endpoint? {
        let current = p.preferred.flatMap { e in p.paths.first { $0.endpoint == e } }
        if let current, let heard = current.lastHeard, now - heard < failover { return current.endpoint }
        let floor = current?.lastHeard ?? .distantPast
        let better = p.paths.filter { ($0.lastHeard ?? .distantPast) > floor && $0.endpoint != current?.endpoint }
        let windowStart = now - 4 * failover
        let candidates = better.filter { ($0.lastHeard ?? .distantPast) >= windowStart }
        // The best-ranked family, then the most recently heard.
        if let best = (candidates.isEmpty ? better : candidates).min(by: {
            (rank($0.endpoint), ($1.lastHeard ?? .distantPast).ns) < (rank($1.endpoint), ($0.lastHeard ?? .distantPast).ns)
        }) {
            return best.endpoint
        }
        return current?.endpoint ?? p.paths.max { ($0.lastHeard ?? .distantPast) < ($1.lastHeard ?? .distantPast) }?.endpoint
    }
}
