#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LockstepCore
import LockstepPlayerProtocol
import LockstepPeerWire
import Logging

/// What Lockstep publishes in its DNS-SD TXT record.
enum LockstepTXT {
    /// Peer protocol version.
    static let version = "v"
    /// Peer id, 32 hex digits.
    static let peerID = "id"
    /// The group's public tag (see `GroupIdentity.tag`): agents of other groups are skipped unseen.
    static let group = "g"
    /// The human name.
    static let name = "n"
    /// `1` while the agent has an open invite (`lockstep group invite`): joining devices try it.
    static let invite = "inv"
}

extension Agent {
    func startDiscovery(port: UInt16) {
        let discovery = DNSSDDiscovery(logger: logger, clock: hostClock)
        let events: AsyncStream<DiscoveryEvent>
        do {
            events = try discovery.start(instanceName: identity.name, port: port, txt: txtRecord())
        } catch {
            logger.error("cannot publish over DNS-SD; continuing without it", metadata: ["error": "\(error)"])
            discoveryState = .unavailable("\(error)")
            return
        }
        self.discovery = discovery
        discovery.recognise(groupTags: keys.group.recognisedTags(day: tagDay))
        discoveryState = .starting
        tasks.append(Task { [weak self] in
            for await event in events {
                guard let self else { return }
                await self.onDiscovery(event)
            }
        })
    }

    func onDiscovery(_ event: DiscoveryEvent) {
        let now = now()
        defer { settleDiscovery(now: now) }
        switch event {
        case .daemonUnavailable(let reason):
            discoveryState = .unavailable(reason)
            logger.warning(
                "mDNS discovery unavailable; start avahi-daemon (systemctl start avahi-daemon, or avahi-daemon -D); continuing with static peers and retrying",
                metadata: ["mdns.reason": "\(reason)"])
        case .daemonAvailable:
            discoveryState = .running
            logger.info("mDNS discovery running")
        case .registered(let name):
            registeredInstance = name
            logger.debug("published over DNS-SD", metadata: ["mdns.instance": "\(name)"])
        case .serviceUpdated(let service):
            guard let peer = PeerID(hex: service.txt[LockstepTXT.peerID] ?? "") else { return }
            let sighting = Membership.Sighting(instance: service.instanceName, interfaceIndex: service.interfaceIndex)
            if peer == identity.peerID {
                // Our own service, or another device with our key (a copied state directory).
                // (Before avahi confirms the registration, the instance is the name asked for.)
                if service.instanceName == registeredInstance ?? identity.name {
                    ownInstances.insert(sighting)
                } else {
                    transport?.drop("clone", "another device announces this device's id over DNS-SD (a copied state directory?): on one of them (not both): lockstep group reset-identity", detail: service.instanceName, from: service.endpoints.first)
                }
                return
            }
            // Any group's open invite: a joining device does not know its group yet.
            noteInviter(service)
            guard let tag = service.txt[LockstepTXT.group], keys.group.recognisedTags(day: tagDay).contains(tag) else { return }
            guard service.txt[LockstepTXT.version] == String(PeerProtocol.version) else {
                logger.notice("a peer speaks another peer protocol version; ignoring it", metadata: ["peer.remote": "\(peer.short)", "peer.version": "\(service.txt[LockstepTXT.version] ?? "-")"])
                return
            }
            execute(node.onSighting(peer, name: service.txt[LockstepTXT.name], sighting: sighting, endpoints: service.endpoints, now: now), now: now)
            rearm(now)
        case .serviceRemoved(let instance, let interface):
            inviters[instance] = nil
            ownInstances.remove(.init(instance: instance, interfaceIndex: interface))
            execute(node.onWithdrawal(.init(instance: instance, interfaceIndex: interface), now: now), now: now)
            rearm(now)
        }
    }

    /// How long a peer must have been reachable before its instances are settled: one that flaps
    /// between reachable and lost (an overloaded host, a bad link) keeps its resolve open, rather
    /// than having discovery open and close refs (each a thread and a D-Bus connection to avahi)
    /// at the pace it flaps. A lost peer's instances are resolved again at once.
    static let settleAfter = TimeSpan.seconds(5)

    /// Tells discovery which instances need no resolving (``DNSSDDiscovery/settle(_:)``): those
    /// of peers reachable for ``settleAfter``, and our own once avahi confirmed its name. A
    /// reachable peer then costs no `DNSServiceRef`; one that renumbers is followed by the
    /// address its datagrams come from (a learned path). Called on membership and discovery
    /// events, and about once a second from ``step(_:)``.
    func settleDiscovery(now: LocalTime) {
        guard let discovery else { return }
        settleCheckedAt = now
        var settled = ownInstances.filter { $0.instance == registeredInstance }
        for peer in node.membership.peers.values where peer.state == .reachable && now - peer.since >= Self.settleAfter {
            settled.formUnion(peer.sightings.keys)
        }
        let spared = Self.sparedInstanceNames(peers: node.membership.peers.values, measured: node.clocks.measured, ownName: identity.name)
        if spared != sparedNames {
            sparedNames = spared
            discovery.spare(spared)
        }
        guard settled != settledInstances else { return }
        settledInstances = settled
        discovery.settle(settled)
    }

    /// The names of instances discovery need not resolve: those of peers this agent reaches
    /// through others' introductions (heard, with a name from their hello) and does not measure.
    /// A peer it measures needs DNS-SD's word for its clock reports to count (the Sybil rule of
    /// `MeshClock`), so it is resolved as before; so is every peer in a group of up to 9, where
    /// all are measured. A name that two known devices (or this one) carry is resolved too: the
    /// instance could be either's. So, of a large group started together, an agent resolves its
    /// neighbours in the clock grid and the instances it reached no other way, not every one.
    nonisolated static func sparedInstanceNames(peers: some Collection<Membership.Peer>, measured: Set<PeerID>, ownName: String) -> Set<String> {
        var carriers: [String: Int] = [ownName: 1]
        for peer in peers { carriers[peer.name, default: 0] += 1 }
        var names = Set<String>()
        for peer in peers where peer.state == .reachable && peer.sightings.isEmpty && peer.lastHeard != nil
            && peer.name != peer.id.short && carriers[peer.name] == 1 && !measured.contains(peer.id)
        {
            names.insert(peer.name)
        }
        return names
    }

    /// A peer restarted: its instances are resolved again (its port may have changed).
    func refreshDiscovery(of peer: PeerID) {
        guard let sightings = node.membership.peers[peer]?.sightings.keys, !sightings.isEmpty else { return }
        discovery?.refresh(Set(sightings))
    }

    /// Adds `HOST:PORT` (numeric, or a name resolved once now, off the agent's loop).
    func addStaticPeer(_ text: String, now: LocalTime) {
        if let endpoint = Endpoint(text) {
            staticEndpoints.append(endpoint)
            execute(node.onStaticEndpoint(endpoint, now: now), now: now)
            return
        }
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else {
            logger.error("--peer: expected HOST:PORT", metadata: ["peer.given": "\(text)"])
            return
        }
        let host = text[..<colon].trimmed(where: { $0 == "[" || $0 == "]" })
        tasks.append(Task.detached { [weak self, logger] in
            let endpoints = Self.resolve(host: host, port: port)
            if endpoints.isEmpty { logger.error("--peer: cannot resolve the host", metadata: ["peer.given": "\(text)"]) }
            guard let self else { return }
            await self.addResolved(endpoints)
        })
    }

    private func addResolved(_ endpoints: [Endpoint]) {
        let now = now()
        staticEndpoints += endpoints.prefix(8)
        for e in endpoints { execute(node.onStaticEndpoint(e, now: now), now: now) }
        step(now)
    }

    /// getaddrinfo for UDP, numeric results.
    nonisolated static func resolve(host: String, port: UInt16) -> [Endpoint] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &result) == 0 else { return [] }
        defer { freeaddrinfo(result) }
        var out: [Endpoint] = []
        var p = result
        while let ai = p {
            if let addr = ai.pointee.ai_addr {
                var storage = sockaddr_storage()
                withUnsafeMutableBytes(of: &storage) { dst in
                    dst.copyMemory(from: UnsafeRawBufferPointer(start: addr, count: Int(ai.pointee.ai_addrlen)))
                }
                if let e = PeerSocket.endpoint(from: storage), !out.contains(e) { out.append(e) }
            }
            p = ai.pointee.ai_next
        }
        return out
    }
}
