import LockstepCore

/// One browse result: a DNS-SD instance as seen on one interface.
struct DNSSDServiceKey: Hashable, Comparable, Sendable, CustomStringConvertible {
    var name: String
    var interfaceIndex: UInt32

    static func < (a: Self, b: Self) -> Bool {
        (a.name, a.interfaceIndex) < (b.name, b.interfaceIndex)
    }

    var description: String { "\(name)%\(interfaceIndex)" }
}

/// A host name (an SRV target) on one interface: what the A and AAAA queries look up.
struct DNSSDHostKey: Hashable, Sendable, CustomStringConvertible {
    /// The target as the resolver reported it, with its trailing dot, e.g. `vm-2.local.`.
    var host: String
    var interfaceIndex: UInt32

    var description: String { "\(host)%\(interfaceIndex)" }
}

/// The bookkeeping of discovery, as a state machine without I/O: browse, resolve and address
/// results go in; directives ("resolve this", "query that host", "emit this event") come out.
///
/// ``DNSSDEventLoop`` is its shell: it owns the `DNSServiceRef`s the directives ask for and feeds
/// their callbacks back in. Splitting it this way lets the tests drive avahi's odd event
/// sequences (duplicates per protocol, renames, removals) without a daemon.
///
/// How avahi reports things, and what this does about it:
/// - Browse reports each instance once per interface *and* IP protocol (avahi browses with
///   `AVAHI_PROTO_UNSPEC`, and the compat layer drops the protocol): adds and removes are
///   counted per (instance, interface); the instance is gone when the count returns to 0.
/// - Address queries likewise report an address once per protocol it was seen over; each
///   address is counted, and is part of the set while its count is above 0.
/// - A resolve keeps running after its first answer and reports again when the SRV target or
///   the TXT record changes (e.g. after a host rename or ``DNSSDDiscovery/updateTXT(_:)``).
/// - Address queries are shared by every instance that names the same host on the same
///   interface, and stopped when the last one goes.
/// - At most ``limit`` instances are resolved at once (each costs avahi's compat layer a
///   thread and a D-Bus connection per `DNSServiceRef`), never more than `maxServices`: the
///   limit rises while avahi opens refs fast and halves when it is slow
///   (``onRefOpened(slow:)``); later ones wait, first come first
///   served, and start when an instance goes away, or when one turns out to belong to another
///   group or protocol version (its TXT record): that one is *parked* until our own TXT changes
///   (``onOwnTXT(_:)``); and while instances wait, the slots are time-shared (``rotate()``),
///   so services that claim our group cannot hold every slot either.
/// - Once an instance's peer is reachable (the agent says so: ``onSettled(_:)``) and the
///   instance has been reported since its resolve started, its resolve and address queries are
///   closed: it is *dormant*, and costs nothing but its share of the browse. It is resolved
///   again when the browse reports it again (another add, or a remove that leaves it listed),
///   when it leaves the settled set (its peer was lost), when the agent asks (``onRefresh(_:)``,
///   a peer that restarted), and from scratch after a withdrawal. Meanwhile a change of its TXT
///   record or addresses goes unseen: the agent follows a reachable peer that renumbers by the
///   address its datagrams come from (a learned path in `Membership`).
/// - Instances the agent expects need no resolve (``onSpared(_:)``: named like a peer it reaches
///   and does not need DNS-SD for) are *spared*: never reported, they hold no slot and wait for
///   none, until their name leaves the set. Each resolve's queries are multicast to every
///   responder on the link, and in avahi's compat layer it is a thread and a D-Bus connection.
///
/// The bound: whatever is browsed, at most `maxServices` resolves are open, each with at most
/// one A and one AAAA query (shared per host), so with the browse and the registration the
/// shell holds at most `2 + 3 × maxServices` `DNSServiceRef`s (74 with ``DNSSDDiscovery``'s
/// default of 24), each a thread and a D-Bus connection in avahi's compat layer; once every
/// peer is reachable and dormant, just the 2.
///
/// Events: `serviceUpdated` is emitted once an instance is resolved and has at least one
/// address, and again whenever that value changes; it is never emitted with no endpoints (if
/// all addresses vanish, the last value stands until new ones arrive or the instance is
/// removed). Updates are collected and emitted by ``flush()``, which the shell calls a short
/// while after the first change, so answers arriving together (A and AAAA; the goodbyes of a
/// host that leaves) give one event, or none when the instance is removed meanwhile.
/// `serviceRemoved` is emitted at once, and only for an instance that was reported.
struct DNSSDTracker {
    enum Directive: Hashable, Sendable {
        case startResolve(DNSSDServiceKey)
        case stopResolve(DNSSDServiceKey)
        case startAddressQueries(DNSSDHostKey)
        case stopAddressQueries(DNSSDHostKey)
        case emit(DiscoveryEvent)
    }

    struct Resolved: Hashable {
        var host: DNSSDHostKey
        var port: UInt16
        var txt: [String: String]
    }

    struct Service {
        /// Browse adds minus removes (one per IP protocol the instance was seen over).
        var browseCount: Int
        /// True while the instance holds one of the `maxServices` resolve slots.
        var active: Bool
        var resolved: Resolved?
        var lastEmitted: DiscoveredService?
        /// Resolved to another group or protocol version: its slot went to others (review M5).
        var parked = false
        /// The ``DNSSDTracker/rotate()`` round in which it last got its slot.
        var activatedIn = 0
        /// Resolved to at least one address since it last got its slot.
        var answered = false
        /// Settled and answered: its slot was given up until something changes (see above).
        var dormant = false
        /// Named like a peer the agent reaches without DNS-SD (``onSpared(_:)``): not resolved.
        var spared = false
    }

    struct Host {
        /// Address bytes (4 or 16) and how many protocols currently report them.
        var addresses: [[UInt8]: Int] = [:]
        var users: Set<DNSSDServiceKey> = []

        var current: Set<[UInt8]> { Set(addresses.filter { $0.value > 0 }.keys) }
    }

    let maxServices: Int
    private(set) var services: [DNSSDServiceKey: Service] = [:]
    private(set) var hosts: [DNSSDHostKey: Host] = [:]
    /// Instances waiting for a resolve slot, oldest first.
    private(set) var waiting: [DNSSDServiceKey] = []
    private var dirty: Set<DNSSDServiceKey> = []
    /// TXT entries an instance must carry to keep its resolve slot: our own group tag and
    /// protocol version (others are parked until ours change). Empty: every instance keeps it.
    private(set) var wanted: [String: String] = [:]
    /// Group tags an instance may carry besides ours: the group's tags of the days either side
    /// of today (the tag is new every day; peer protocol §1).
    private(set) var recognisedTags: Set<String> = []
    /// Rounds of ``rotate()`` so far.
    private var round = 0
    /// A join is looking for inviting devices: nothing is parked (``seekInviters(_:)``).
    private(set) var seeking = false
    /// Instances whose peer the agent holds reachable (``onSettled(_:)``): once answered, they
    /// go dormant. Kept across ``reset()``: it is the agent's knowledge, not avahi's.
    private(set) var settled: Set<DNSSDServiceKey> = []
    /// Instance names not to resolve (``onSpared(_:)``). Kept across ``reset()``, as ``settled``.
    private(set) var sparedNames: Set<String> = []

    /// How many instances may hold a resolve slot now: between ``minLimit`` and ``maxServices``,
    /// following how fast avahi answers (``onRefOpened(slow:)``).
    private(set) var limit: Int
    /// The fewest slots the limit falls to.
    let minLimit: Int

    /// - Parameters:
    ///   - maxServices: the most instances ever resolved at once (the bound below).
    ///   - initialLimit: how many at first (default `maxServices`): the shell starts low and
    ///     lets ``onRefOpened(slow:)`` raise it while avahi answers fast; it is also the
    ///     fewest the limit falls back to.
    init(maxServices: Int, initialLimit: Int? = nil) {
        precondition(maxServices > 0)
        self.maxServices = maxServices
        self.minLimit = max(1, min(initialLimit ?? maxServices, maxServices))
        self.limit = minLimit
    }

    /// The shell opened a `DNSServiceRef`; `slow` if that took avahi long (the shell's
    /// threshold). Opening one is a blocking round trip to avahi-daemon, so how long it takes
    /// says how busy the daemon is: a fast one raises the limit by one (waiting instances get
    /// the new slot now), a slow one halves it (down to ``minLimit``; instances holding a slot
    /// keep it until they give it up as usual). Many devices starting together saturate the
    /// daemons, and then every ref opened early delays the answers of the others; an idle
    /// daemon answers in milliseconds and gets every slot.
    mutating func onRefOpened(slow: Bool) -> [Directive] {
        if slow {
            limit = max(minLimit, limit / 2)
            return []
        }
        guard limit < maxServices else { return [] }
        limit += 1
        return fillSlots()
    }

    var activeCount: Int { services.values.count { $0.active } }

    /// True when some instance changed since the last ``flush()``.
    var hasPendingUpdates: Bool { !dirty.isEmpty }

    // MARK: Inputs

    /// A browse add (`added`) or remove for `name` on `interfaceIndex`.
    mutating func onBrowse(added: Bool, name: String, interfaceIndex: UInt32) -> [Directive] {
        let key = DNSSDServiceKey(name: name, interfaceIndex: interfaceIndex)
        if added {
            if services[key] != nil {
                services[key]!.browseCount += 1
                return wake(key)
            }
            services[key] = Service(browseCount: 1, active: false)
            if sparedNames.contains(name) {
                services[key]!.spared = true
                return []
            }
            if activeCount < limit { return [activate(key)] }
            waiting.append(key)
            return []
        }
        guard var service = services[key] else { return [] }
        service.browseCount -= 1
        guard service.browseCount <= 0 else {
            services[key] = service
            return wake(key)
        }
        return remove(key)
    }

    /// The resolve of `key` reported its SRV target, port and TXT record (first time or changed).
    mutating func onResolved(_ key: DNSSDServiceKey, hostTarget: String, port: UInt16, txt: [String: String]) -> [Directive] {
        guard let service = services[key], service.active else { return [] }
        // Another group's device with an open invite stays: a joining agent looks for it.
        if !seeking, !isWanted(txt), txt[LockstepTXT.invite] != "1" { return park(key) }
        let hostKey = DNSSDHostKey(host: hostTarget, interfaceIndex: key.interfaceIndex)
        var directives: [Directive] = []
        let oldHost = service.resolved?.host
        services[key]!.resolved = Resolved(host: hostKey, port: port, txt: txt)
        if oldHost != hostKey {
            if let oldHost { directives += release(oldHost, by: key) }
            directives += acquire(hostKey, by: key)
        }
        dirty.insert(key)
        return directives
    }

    /// An address query for `host` reported `address` (4 or 16 bytes) added or removed.
    mutating func onAddress(_ host: DNSSDHostKey, address: [UInt8], added: Bool) -> [Directive] {
        guard address.count == 4 || address.count == 16, var entry = hosts[host] else { return [] }
        let before = entry.current
        let count = (entry.addresses[address] ?? 0) + (added ? 1 : -1)
        entry.addresses[address] = count > 0 ? count : nil
        hosts[host] = entry
        if entry.current != before { dirty.formUnion(entry.users) }
        return []
    }

    /// Emits `serviceUpdated` for every instance whose reported value changed since last time.
    mutating func flush() -> [Directive] {
        var directives: [Directive] = []
        for key in dirty.sorted() {
            guard let service = services[key], let resolved = service.resolved,
                let host = hosts[resolved.host]
            else { continue }
            let endpoints = DNSSDTracker.endpoints(host.current, port: resolved.port, interfaceIndex: key.interfaceIndex)
            guard !endpoints.isEmpty else { continue }
            let value = DiscoveredService(
                instanceName: key.name, interfaceIndex: key.interfaceIndex, hostTarget: resolved.host.host,
                txt: resolved.txt, endpoints: endpoints)
            services[key]!.answered = true
            if value != service.lastEmitted {
                services[key]!.lastEmitted = value
                directives.append(.emit(.serviceUpdated(value)))
            }
            if settled.contains(key) { directives += makeDormant(key) }
        }
        dirty.removeAll()
        return directives
    }

    /// Forgets everything but ``settled``, without emitting anything: the shell calls this when
    /// it has torn down all `DNSServiceRef`s (the daemon went away). See ``DNSSDDiscovery`` for
    /// why no `serviceRemoved` follows.
    mutating func reset() {
        services.removeAll()
        hosts.removeAll()
        waiting.removeAll()
        dirty.removeAll()
    }

    /// The instances whose peer the agent holds reachable, all of them (it replaces the last
    /// set). Those answered since they got their slot go dormant now, those waiting for a slot
    /// that were reported before go dormant without one, and the others once they are answered
    /// (``flush()``); dormant instances no longer in the set are resolved again.
    mutating func onSettled(_ keys: Set<DNSSDServiceKey>) -> [Directive] {
        let left = settled.subtracting(keys)
        settled = keys
        var directives: [Directive] = []
        for key in left.sorted() { directives += wake(key) }
        for key in keys.sorted() {
            guard let service = services[key], !service.dormant, !service.parked else { continue }
            if service.active {
                if service.answered { directives += makeDormant(key) }
            } else if service.lastEmitted != nil {
                waiting.removeAll { $0 == key }
                services[key]!.dormant = true
            }
        }
        return directives
    }

    /// Instance names the agent needs no resolve for, all of them (it replaces the last set): the
    /// names of peers it already reaches through others' introductions and does not need DNS-SD
    /// to vouch for. An instance so named that was never reported is spared: its resolve (if
    /// it holds a slot) is closed and the slot given to the next waiting, or it leaves the queue;
    /// a new one is not queued. One whose name leaves the set is resolved in turn. The name is
    /// a label (avahi renames on conflicts), so a wrong guess only delays a resolve until the
    /// agent's view changes; identity still comes from the TXT record of what is resolved.
    mutating func onSpared(_ names: Set<String>) -> [Directive] {
        guard names != sparedNames else { return [] }
        sparedNames = names
        var directives: [Directive] = []
        for key in services.keys.sorted() {
            let service = services[key]!
            let spare = names.contains(key.name) && service.lastEmitted == nil && !service.parked && !service.dormant
            if spare, !service.spared {
                if service.active {
                    directives += closeResolve(key)
                } else {
                    waiting.removeAll { $0 == key }
                }
                services[key]!.spared = true
            } else if !spare, service.spared {
                services[key]!.spared = false
                waiting.append(key)
            }
        }
        return directives + fillSlots()
    }

    /// Dormant instances among `keys` are resolved again (their peer restarted, so what was
    /// resolved may be stale); they go dormant again once answered, if still settled.
    mutating func onRefresh(_ keys: Set<DNSSDServiceKey>) -> [Directive] {
        keys.sorted().flatMap { wake($0) }
    }

    /// Our own TXT record changed (or was first set): instances must match its group tag and
    /// version to keep a resolve slot; those parked for another group get their turn again.
    mutating func onOwnTXT(_ txt: [String: String]) -> [Directive] {
        let next = [LockstepTXT.group, LockstepTXT.version].reduce(into: [String: String]()) { out, k in if let v = txt[k] { out[k] = v } }
        guard next != wanted else { return [] }
        wanted = next
        return wakeParked()
    }

    /// Group tags also taken for ours (``recognisedTags``); those parked get their turn again.
    mutating func onRecognisedTags(_ tags: Set<String>) -> [Directive] {
        guard tags != recognisedTags else { return [] }
        recognisedTags = tags
        return wakeParked()
    }

    private func isWanted(_ txt: [String: String]) -> Bool {
        wanted.allSatisfy { k, v in txt[k] == v || (k == LockstepTXT.group && txt[k].map(recognisedTags.contains) == true) }
    }

    /// A join starts (`true`) or ends looking for inviting devices. While it looks, instances of
    /// another group are not parked, and parked ones get their turn again: a device of the group
    /// being joined may open its invite after it was parked, and its TXT record shows it a second
    /// or two later. When it ends, those resolved meanwhile are parked again.
    mutating func seekInviters(_ on: Bool) -> [Directive] {
        guard on != seeking else { return [] }
        seeking = on
        guard !on else { return wakeParked() }
        var directives: [Directive] = []
        for key in services.keys.sorted() {
            guard let r = services[key]?.resolved, services[key]!.active,
                !isWanted(r.txt), r.txt[LockstepTXT.invite] != "1" else { continue }
            directives += park(key)
        }
        return directives
    }

    /// Every parked instance gets its turn again.
    private mutating func wakeParked() -> [Directive] {
        var directives: [Directive] = []
        for key in services.keys.sorted() where services[key]!.parked {
            services[key]!.parked = false
            if activeCount < limit {
                directives.append(activate(key))
            } else {
                waiting.append(key)
            }
        }
        return directives
    }

    /// Time-sharing of the resolve slots while instances wait (review M5: services that claim
    /// our group, from anyone, could otherwise hold every slot for good). Called twice a second
    /// by the shell while ``waiting`` is not empty: instances already reported, and those that
    /// have held a slot for a whole round without an answer, give it to the longest waiting ones
    /// and queue again. One that was reported stays reported (its resolve resumes on its next
    /// turn and reports only a change).
    mutating func rotate() -> [Directive] {
        round += 1
        guard !waiting.isEmpty else { return [] }
        let due = services.filter { $0.value.active && ($0.value.lastEmitted != nil || $0.value.activatedIn < round - 1) }
            .sorted { ($0.value.activatedIn, $0.key) < ($1.value.activatedIn, $1.key) }
            .prefix(waiting.count).map(\.key)
        var directives: [Directive] = []
        for key in due {
            directives += closeResolve(key)
            waiting.append(key)
        }
        return directives + fillSlots()
    }

    // MARK: Helpers

    /// Gives the free slots, up to ``limit``, to the longest waiting instances. (Instances wait
    /// only while the slots are full, so after one is given up this starts at most one.)
    private mutating func fillSlots() -> [Directive] {
        var directives: [Directive] = []
        while activeCount < limit, !waiting.isEmpty { directives.append(activate(waiting.removeFirst())) }
        return directives
    }

    private mutating func activate(_ key: DNSSDServiceKey) -> Directive {
        services[key]!.active = true
        services[key]!.answered = false
        services[key]!.activatedIn = round
        return .startResolve(key)
    }

    /// Closes the resolve and address queries of `key` (settled and answered) and gives its slot
    /// to the next waiting. What it last reported stands.
    private mutating func makeDormant(_ key: DNSSDServiceKey) -> [Directive] {
        let directives = closeResolve(key)
        services[key]!.dormant = true
        return directives + fillSlots()
    }

    /// Closes the resolve of `key` (which holds a slot) and its share of the address queries,
    /// and frees its slot; what it last reported stands. The caller gives the slot on.
    private mutating func closeResolve(_ key: DNSSDServiceKey) -> [Directive] {
        var directives: [Directive] = [.stopResolve(key)]
        if let host = services[key]!.resolved?.host { directives += release(host, by: key) }
        services[key]!.active = false
        services[key]!.resolved = nil
        dirty.remove(key)
        return directives
    }

    /// Resolves `key` again if it is dormant (at once if a slot is free, else in turn).
    private mutating func wake(_ key: DNSSDServiceKey) -> [Directive] {
        guard services[key]?.dormant == true else { return [] }
        services[key]!.dormant = false
        if activeCount < limit { return [activate(key)] }
        waiting.append(key)
        return []
    }

    /// Stops resolving `key` (it is another group's), gives its slot to the next waiting, and
    /// withdraws it if it had been reported.
    private mutating func park(_ key: DNSSDServiceKey) -> [Directive] {
        guard let service = services[key] else { return [] }
        var directives = closeResolve(key)
        if service.lastEmitted != nil {
            directives.append(.emit(.serviceRemoved(instanceName: key.name, interfaceIndex: key.interfaceIndex)))
        }
        services[key]!.parked = true
        services[key]!.lastEmitted = nil
        return directives + fillSlots()
    }

    private mutating func remove(_ key: DNSSDServiceKey) -> [Directive] {
        guard let service = services.removeValue(forKey: key) else { return [] }
        dirty.remove(key)
        var directives: [Directive] = []
        if service.active {
            directives.append(.stopResolve(key))
            if let host = service.resolved?.host { directives += release(host, by: key) }
        } else {
            waiting.removeAll { $0 == key }
        }
        if service.lastEmitted != nil {
            directives.append(.emit(.serviceRemoved(instanceName: key.name, interfaceIndex: key.interfaceIndex)))
        }
        return directives + fillSlots()
    }

    private mutating func acquire(_ host: DNSSDHostKey, by key: DNSSDServiceKey) -> [Directive] {
        if hosts[host] != nil {
            hosts[host]!.users.insert(key)
            return []
        }
        hosts[host] = Host(users: [key])
        return [.startAddressQueries(host)]
    }

    private mutating func release(_ host: DNSSDHostKey, by key: DNSSDServiceKey) -> [Directive] {
        guard hosts[host] != nil else { return [] }
        hosts[host]!.users.remove(key)
        guard hosts[host]!.users.isEmpty else { return [] }
        hosts[host] = nil
        return [.stopAddressQueries(host)]
    }

    /// The endpoints for a set of addresses: IPv4 first, then IPv6 other than link-local, then
    /// IPv6 link-local (scoped to `interfaceIndex`); by address within each group.
    static func endpoints(_ addresses: Set<[UInt8]>, port: UInt16, interfaceIndex: UInt32) -> [Endpoint] {
        func rank(_ bytes: [UInt8]) -> Int {
            if bytes.count == 4 { return 0 }
            return bytes[0] == 0xfe && bytes[1] & 0xc0 == 0x80 ? 2 : 1
        }
        return addresses.sorted { a, b in
            rank(a) != rank(b) ? rank(a) < rank(b) : a.lexicographicallyPrecedes(b)
        }.map { bytes in
            if bytes.count == 4 {
                return .v4(a: bytes[0], b: bytes[1], c: bytes[2], d: bytes[3], port: port)
            }
            return .v6(bytes: bytes, port: port, scope: rank(bytes) == 2 ? interfaceIndex : 0)
        }
    }
}
