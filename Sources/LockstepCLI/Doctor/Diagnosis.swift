import LockstepPlayerProtocol

/// The judgement of `lockstep doctor`: from ``DoctorObservations`` to a ``DoctorReport``, one
/// check at a time, in order. Pure: no socket, no clock, no process; the command gathers, this
/// decides, and the tests feed it what a broken device looks like.
///
/// Each failure names a cause a person can act on and the command that fixes it. A check that
/// needs what an earlier one found missing (no agent: no peers) is `skipped`, saying why.
public struct Diagnosis: Sendable {
    /// Where a figure stops being fine.
    public struct Limits: Sendable {
        /// A clock error bound above this fails; above a quarter of it, a warning.
        public var clockBoundNs: Double = 2_000_000
        /// A local player further than this from the group timeline fails.
        public var syncErrorNs: Int64 = 20_000_000
        /// An output or start latency setting above this is worth a second look.
        public var latencyNs: Int64 = 1_000_000_000
        /// A peer heard from less than this long ago counts as heard now.
        public var recentNs: Int64 = 10_000_000_000
        /// A reachable peer whose last clock sample is older than this does not answer probes
        /// (the agent probes every peer several times a second).
        public var staleSampleNs: Int64 = 3_000_000_000

        public init() {}
    }

    public var limits = Limits()

    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    public func report(_ o: DoctorObservations) -> DoctorReport {
        var checks = [agent(o), avahi(o), multicast(o)]
        if let status = o.status {
            let port = udpPort(o, status)
            checks.append(port)
            checks.append(peers(o, status, nothingArrives: port.outcome == .failed))
            checks.append(keyEpochs(o, status))
            checks.append(clock(o))
            checks.append(players(o))
        } else {
            for id in [DoctorReport.ID.udpPort, .peers, .keyEpochs, .clock, .players] {
                checks.append(.init(id, .skipped, "needs a running agent (see above)"))
            }
        }
        return DoctorReport(checks: checks)
    }

    // MARK: 1. The agent

    func agent(_ o: DoctorObservations) -> DoctorReport.Check {
        let start = o.systemAgent ? "sudo systemctl enable --now lockstep" : "systemctl --user enable --now lockstep (or run lockstepd)"
        let logs = o.systemAgent ? "journalctl -u lockstep -e" : "journalctl --user -u lockstep -e"
        switch o.agent {
        case .answered(let s):
            return .init(.agent, .ok, "lockstepd '\(s.name)' (version \(s.version), pid \(s.pid), up \(Human.duration(ns: s.uptimeNs))) answers on \(o.socketPath)")
        case .notRunning(socketExists: false):
            return .init(.agent, .failed, "no agent is running: nothing at \(o.socketPath)", fix: "\(start); if it does not stay up: \(logs)")
        case .notRunning(socketExists: true):
            return .init(
                .agent, .failed, "\(o.socketPath) exists but no agent answers on it: the agent stopped without cleaning up (killed or crashed)",
                fix: "see why: \(logs); then \(o.systemAgent ? "sudo systemctl restart lockstep" : "systemctl --user restart lockstep")")
        case .permissionDenied:
            return .init(
                .agent, .failed, "not allowed to use \(o.socketPath): the system agent's socket is for members of the lockstep group",
                fix: "sudo adduser $USER lockstep, then log out and in again")
        case .failed(let why):
            return .init(.agent, .failed, "the agent on \(o.socketPath) did not answer properly: \(why)", fix: "restart it: \(o.systemAgent ? "sudo systemctl restart lockstep" : "systemctl --user restart lockstep")")
        }
    }

    // MARK: 2. avahi-daemon

    func avahi(_ o: DoctorObservations) -> DoctorReport.Check {
        let fix = "sudo systemctl enable --now avahi-daemon (package avahi-daemon)"
        if let mdns = o.status?.mdns {
            if mdns == "off" {
                return .init(.avahi, .warning, "the agent runs without mDNS (--no-mdns / LOCKSTEP_NO_MDNS): it reaches only its static peers (LOCKSTEP_PEER)")
            }
            if mdns.hasPrefix("unavailable") {
                let reason = mdns.dropFirst("unavailable: ".count)
                return .init(.avahi, .failed, "the agent cannot use avahi-daemon: \(reason); it finds no peer by mDNS", fix: fix)
            }
        }
        switch o.browse {
        case .daemonUnavailable(let message):
            return .init(.avahi, .failed, "avahi-daemon is not running or not answering (avahi-browse: \(message))", fix: fix)
        case .failed(let message):
            return .init(.avahi, .warning, "avahi-browse failed: \(message)", fix: "check avahi-daemon: systemctl status avahi-daemon")
        case .toolMissing:
            if o.status?.mdns == "running" { return .init(.avahi, .ok, "the agent publishes and browses through avahi-daemon (install avahi-utils for the network view)") }
            return .init(.avahi, .skipped, "avahi-browse is not installed, and no agent to ask", fix: "sudo apt install avahi-utils")
        case .services(let list):
            if o.status?.mdns == "starting" {
                return .init(.avahi, .warning, "avahi-daemon answers, but the agent has not reached it yet (mdns: starting)")
            }
            return .init(.avahi, .ok, "avahi-daemon answers; it sees \(list.count == 0 ? "no" : String(Set(list.compactMap(\.peerID)).count)) Lockstep agent\(Set(list.compactMap(\.peerID)).count == 1 ? "" : "s") on the network")
        }
    }

    // MARK: 3. Multicast

    func multicast(_ o: DoctorObservations) -> DoctorReport.Check {
        let candidates = o.interfaces.filter { $0.up && !$0.loopback && !$0.addresses.isEmpty }
        let carrying = candidates.filter(\.multicast)
        if candidates.isEmpty {
            return .init(.multicast, .failed, "no network interface is up with an address: this device is not on a network", fix: "connect it (ip -br addr shows the interfaces)")
        }
        if carrying.isEmpty {
            let names = candidates.map(\.name).joined(separator: ", ")
            return .init(
                .multicast, .failed, "no interface carries multicast (\(names): multicast off): mDNS cannot find or announce anything",
                fix: candidates.map { "sudo ip link set \($0.name) multicast on" }.joined(separator: "; "))
        }
        let without = candidates.filter { !$0.multicast }
        let list = carrying.map { "\($0.name) (\($0.addresses.first { !$0.contains(":") } ?? $0.addresses[0]))" }.joined(separator: ", ")
        if !without.isEmpty {
            return .init(
                .multicast, .warning, "multicast on \(list), but off on \(without.map(\.name).joined(separator: ", ")): devices behind those are not found",
                fix: without.map { "sudo ip link set \($0.name) multicast on" }.joined(separator: "; "))
        }
        return .init(.multicast, .ok, "multicast on \(list)")
    }

    // MARK: 4. The UDP port

    func udpPort(_ o: DoctorObservations, _ s: AgentStatus) -> DoctorReport.Check {
        guard s.udpPort != 0 else {
            return .init(.udpPort, .failed, "the agent has no UDP socket for its peers", fix: "restart it and read its log")
        }
        let known = o.peers?.peers ?? []
        let addressed = known.filter { !$0.addresses.isEmpty }
        guard !addressed.isEmpty else {
            return .init(.udpPort, .skipped, "udp/\(s.udpPort): no peer address known yet, nothing to test it against")
        }
        let reachable = known.filter { $0.state == "reachable" }
        if !reachable.isEmpty {
            return .init(.udpPort, .ok, "udp/\(s.udpPort): datagrams arrive from \(reachable.count) of the \(addressed.count) peer\(addressed.count == 1 ? "" : "s") seen")
        }
        let received = s.counters["received"] ?? 0
        let grew = o.statusLater.map { ($0.counters["received"] ?? 0) > received } ?? false
        guard !grew else {
            return .init(.udpPort, .warning, "udp/\(s.udpPort): datagrams arrive, but no peer is reachable yet")
        }
        let names = addressed.map(\.name).joined(separator: ", ")
        let fixedPort = "LOCKSTEP_PORT=\(s.udpPort) in \(o.systemAgent ? "/etc/lockstep/lockstepd.conf" : "~/.config/lockstep/lockstepd.conf") keeps the port across restarts"
        return .init(
            .udpPort, .failed,
            "nothing arrives on udp/\(s.udpPort) from the \(addressed.count) peer\(addressed.count == 1 ? "" : "s") seen (\(names))\(received == 0 ? ", not one datagram since the agent started" : ""): a firewall on this device drops it",
            fix: "allow it in: sudo nft add rule inet filter input udp dport \(s.udpPort) accept (or: sudo ufw allow \(s.udpPort)/udp); \(fixedPort)")
    }

    // MARK: 5. Peers

    func peers(_ o: DoctorObservations, _ s: AgentStatus, nothingArrives: Bool) -> DoctorReport.Check {
        let known = o.peers?.peers ?? []
        var problems: [String] = []
        var fixes: [String] = []
        var failed = false
        for p in known where p.state == "reachable" {
            // Heard, but its answers to this agent's probes stopped: one way is blocked.
            if let c = o.clock?.peers.first(where: { $0.peerID == p.peerID }), c.lastSampleAgeNs > limits.staleSampleNs {
                problems.append("\(p.name) is heard but has not answered this device for \(Human.duration(ns: c.lastSampleAgeNs)) (\(c.lost) probes lost): a firewall on \(p.name) drops its UDP port")
                fixes.append("on \(p.name): allow its UDP port in (lockstep status shows it), then lockstep doctor there")
                failed = true
            }
        }
        for p in known where p.state != "reachable" {
            let heardRecently = p.lastHeardAgoNs.map { $0 < limits.recentNs } ?? false
            let address = p.preferred ?? p.addresses.first ?? "no address"
            if nothingArrives {
                problems.append("\(p.name) (\(address)) does not answer: nothing reaches this device (see udp port)")
            } else if p.state == "lost" {
                let heard = p.lastHeardAgoNs.map { ", last heard \(Human.duration(ns: $0)) ago" } ?? ""
                problems.append("\(p.name) was reachable and is lost since \(Human.duration(ns: p.stateAgeNs))\(heard): switched off, removed, its agent stopped, or a firewall on it since")
                fixes.append("if \(p.name) is gone for good, nothing to do; else run lockstep doctor on \(p.name)")
            } else if heardRecently {
                problems.append("\(p.name) (\(address)) is heard but does not hear this device: a firewall on \(p.name) drops its UDP port")
                fixes.append("on \(p.name): allow its UDP port in (lockstep status shows it), then lockstep doctor there")
            } else {
                problems.append("\(p.name) is seen by mDNS (\(address)) but never answered: a firewall on \(p.name) drops its UDP port, or \(p.name) is gone and its mDNS record is stale")
                fixes.append("on \(p.name): allow its UDP port in (lockstep status shows it); if \(p.name) was removed, its record expires by itself")
            }
            failed = true
        }
        // What avahi sees that the agent does not: other groups, other protocol versions.
        var seen: [String: MDNSBrowser.Service] = [:]
        if case .services(let list) = o.browse {
            for service in list where service.peerID != nil && service.peerID != s.peerID {
                if seen[service.peerID!] == nil || (seen[service.peerID!]?.address?.contains(":") ?? false) { seen[service.peerID!] = service }
            }
        }
        let knownIDs = Set(known.map(\.peerID))
        let reachableCount = known.filter { $0.state == "reachable" }.count
        for (id, service) in seen.sorted(by: { $0.key < $1.key }) where !knownIDs.contains(id) {
            let at = service.address.map { " at \($0)" } ?? ""
            if service.groupTag != s.group.tag {
                problems.append("\(service.peerName)\(at) runs Lockstep in another group (tag \(service.groupTag ?? "none"); this device: \(s.group.tag)): the two never play together")
                fixes.append("to join its group: on \(service.peerName) run lockstep group invite, then here lockstep group join CODE")
                if reachableCount == 0 { failed = true }
            } else if service.peerProtocol != String(s.peerProtocol) {
                problems.append("\(service.peerName)\(at) speaks peer protocol \(service.peerProtocol ?? "?") (this device: \(s.peerProtocol))")
                fixes.append("install the same Lockstep version on both devices (this one: \(s.version))")
                failed = true
            } else {
                problems.append("\(service.peerName)\(at) is announced on mDNS in this group but unknown to the agent")
                fixes.append("wait a few seconds and run lockstep doctor again; if it stays: restart the agent")
                failed = true
            }
        }
        if problems.isEmpty {
            if known.isEmpty {
                return .init(
                    .peers, .warning, "no other Lockstep device seen",
                    fix: "start lockstepd on another device of this network and join the group (lockstep group create / join); mDNS does not cross routers: name peers with LOCKSTEP_PEER=HOST:PORT")
            }
            return .init(.peers, .ok, "\(known.count) peer\(known.count == 1 ? "" : "s") reachable: \(known.map(\.name).joined(separator: ", "))")
        }
        return .init(
            .peers, failed ? .failed : .warning, problems.joined(separator: "; "),
            fix: fixes.isEmpty ? nil : Array(Set(fixes)).sorted().joined(separator: "; "))
    }

    // MARK: 6. Key epochs

    func keyEpochs(_ o: DoctorObservations, _ s: AgentStatus) -> DoctorReport.Check {
        let keys = ["dropped_unknown_key_epoch", "dropped_auth_failed"]
        let before = keys.map { s.counters[$0] ?? 0 }.reduce(0, +)
        let after = o.statusLater.map { l in keys.map { l.counters[$0] ?? 0 }.reduce(0, +) } ?? before
        let epoch = "key epoch \(s.group.epoch) of group '\(s.group.name)'"
        let fix = "on a device that plays with the group: lockstep group invite; here: lockstep group join CODE"
        let clones = o.statusLater.map { $0.counters["dropped_clone"] ?? 0 } ?? (s.counters["dropped_clone"] ?? 0)
        if clones > 0 {
            return .init(
                .keyEpochs, .failed,
                "another device uses this device's key (\(clones) of its datagrams or announcements seen): its state directory was copied from this one",
                fix: "on one of the two (not both): lockstep group reset-identity (a new device key; the members admit it)")
        }
        if after > before {
            let seconds = o.seconds > 0 ? " in the last \(Human.fixed(o.seconds, 1)) s" : ""
            return .init(
                .keyEpochs, .failed,
                "\(after - before) datagram\(after - before == 1 ? "" : "s")\(seconds) under a key this agent does not hold (\(epoch)), and no member sent it the key: this device was removed from the group, or is not a member (an old join code)",
                fix: fix)
        }
        // Members stop probing a device that never answers (every 5 s, then not at all after a
        // minute), so a removed device may hear nothing new while it is looked at; but none of
        // the devices it sees answering it says the same.
        let seen = o.peers?.peers ?? []
        if before > 0, !seen.isEmpty, !seen.contains(where: { $0.state == "reachable" }) {
            return .init(
                .keyEpochs, .failed,
                "\(before) datagram\(before == 1 ? "" : "s") since the agent started under a key this agent does not hold (\(epoch)), none of the \(seen.count) device\(seen.count == 1 ? "" : "s") seen answers, and no member sent it the key: this device was removed from the group, or is not a member (an old join code)",
                fix: fix)
        }
        if before > 0 {
            return .init(.keyEpochs, .warning, "\(epoch); \(before) datagram\(before == 1 ? "" : "s") refused for their key since the agent started, none now", fix: "if a device still does not play: \(fix)")
        }
        let removed = o.statusLater.map { $0.counters["dropped_removed_member"] ?? 0 } ?? (s.counters["dropped_removed_member"] ?? 0)
        if removed > 0 {
            return .init(.keyEpochs, .ok, "\(epoch); \(removed) datagram\(removed == 1 ? "" : "s") from removed devices refused (they read nothing the group sends)")
        }
        return .init(.keyEpochs, .ok, "\(epoch); no datagram refused for its key")
    }

    // MARK: 7. Clock

    func clock(_ o: DoctorObservations) -> DoctorReport.Check {
        let reachable = (o.peers?.peers ?? []).filter { $0.state == "reachable" }
        guard let clock = o.clock, !reachable.isEmpty else {
            return .init(.clock, .skipped, "no reachable peer to compare clocks with")
        }
        var bad: [String] = []
        var warn: [String] = []
        var fixes: Set<String> = []
        for c in clock.peers {
            let bound = Human.duration(ns: Int64(saturating: c.errorBoundNs.rounded()))
            let link = "round trip \(Human.duration(ns: c.delayNs))"
            if !c.trusted {
                let closure = c.closureErrorNs.map { " by \(Human.duration(ns: Int64(saturating: $0.rounded()))) over \(c.paths) path\(c.paths == 1 ? "" : "s")" } ?? ""
                bad.append("\(c.name): the other peers contradict its direct clock estimate\(closure) (used: \(c.source))")
                fixes.insert("a path that is slower one way than the other (Wi-Fi power saving, a loaded uplink): put the devices on one wired or 5 GHz network")
            }
            if c.errorBoundNs > limits.clockBoundNs {
                bad.append("\(c.name): clock error bound ±\(bound) (limit \(Human.duration(ns: Int64(limits.clockBoundNs)))), \(link)\(c.delayStepNs.map { ", round trip rose by \(Human.duration(ns: $0))" } ?? "")")
                fixes.insert("the link to the peer is slow or jittery: use a wired link or a 5 GHz Wi-Fi without power saving; players stay within the bound meanwhile")
            } else if c.errorBoundNs > limits.clockBoundNs / 4 {
                warn.append("\(c.name): clock error bound ±\(bound), \(link)")
            }
        }
        let missing = reachable.filter { p in !clock.peers.contains { $0.peerID == p.peerID } }.map(\.name)
        if !missing.isEmpty { warn.append("no clock estimate yet for \(missing.joined(separator: ", "))") }
        if !bad.isEmpty {
            return .init(.clock, .failed, (bad + warn).joined(separator: "; "), fix: fixes.sorted().joined(separator: "; "))
        }
        if !warn.isEmpty { return .init(.clock, .warning, warn.joined(separator: "; ")) }
        let worst = clock.peers.map(\.errorBoundNs).max() ?? 0
        return .init(.clock, .ok, "\(clock.peers.count) peer clock\(clock.peers.count == 1 ? "" : "s") known within ±\(Human.duration(ns: Int64(saturating: worst.rounded()))), every estimate confirmed by the mesh")
    }

    // MARK: 8. Players

    func players(_ o: DoctorObservations) -> DoctorReport.Check {
        let list = o.players?.players ?? []
        guard !list.isEmpty else {
            return .init(.players, .skipped, "no player connected to any agent of the group")
        }
        var bad: [String] = []
        var warn: [String] = []
        var fixes: Set<String> = []
        for p in list {
            let who = "\(p.participant.name) on \(p.participant.peerName)"
            if let e = p.syncErrorNs, e.magnitude > limits.syncErrorNs.magnitude {
                bad.append("\(who) is \(Human.duration(ns: e)) off the group timeline")
                fixes.insert("a player that cannot follow: check that it seeks and changes rate when told, and its output latency setting (lockstep mpv --output-latency-ms)")
            }
            if !p.participant.suspensionReasons.isEmpty {
                warn.append("\(who) is suspended (\(p.participant.suspensionReasons.joined(separator: ", "))): the others play on without it")
            } else if p.participant.readiness != .ready {
                warn.append("\(who) is \(p.participant.readiness.rawValue)")
            }
            if p.outputLatencyNs > limits.latencyNs || p.startLatencyNs > limits.latencyNs {
                warn.append("\(who) says its output latency is \(Human.duration(ns: p.outputLatencyNs)) and start latency \(Human.duration(ns: p.startLatencyNs)): is that right?")
                fixes.insert("measure the device's real delay and set it (lockstep mpv --output-latency-ms MS)")
            }
        }
        if !bad.isEmpty { return .init(.players, .failed, (bad + warn).joined(separator: "; "), fix: fixes.sorted().joined(separator: "; ")) }
        if !warn.isEmpty { return .init(.players, .warning, warn.joined(separator: "; "), fix: fixes.isEmpty ? nil : fixes.sorted().joined(separator: "; ")) }
        return .init(.players, .ok, "\(list.count) player\(list.count == 1 ? "" : "s") ready and in step")
    }
}
