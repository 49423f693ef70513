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
import LockstepPeerWire
import LockstepPlayerProtocol

/// What `lockstep status`, `peers` and `clock` show.
extension Agent {
    func status(now: LocalTime) -> AgentStatus {
        let host = hostTime(now)
        let peers = node.membership.peers.values
        return AgentStatus(
            peerID: identity.peerID.hex, name: identity.name, version: LockstepVersion.current,
            playerProtocol: LockstepVersion.playerProtocol, peerProtocol: PeerProtocol.version,
            socket: configuration.socketPath, stateDir: configuration.stateDirectory, pid: getpid(),
            udpPort: transport?.socket.port ?? 0, incarnation: identity.incarnation, uptimeNs: host.subtractingSaturating(startedAt), hostTimeNs: host,
            group: GroupInfo(name: keys.group.name, tag: keys.group.tag, epoch: keys.group.epoch),
            peersReachable: peers.filter { $0.state == .reachable }.count, peersKnown: peers.count,
            players: clients.values.filter { $0.playerID != nil }.count,
            mdns: discoveryState.description, counters: transport?.snapshot ?? [:])
    }

    func clock(now: LocalTime) -> ClockResult {
        let list: [ClockInfo] = node.membership.reachable.compactMap { peer in
            // (A peer reached only through the mesh has no link: its counters read zero.)
            guard let resolved = node.clocks.resolved(peer, at: now) else { return nil }
            let link = node.clocks.links[peer]
            let e = resolved.estimate
            let source: String
            switch resolved.source {
            case .direct: source = "direct"
            case .via(let other): source = "via " + name(of: other) + (resolved.combinedPaths > 1 ? " +\(resolved.combinedPaths - 1)" : "")
            }
            return ClockInfo(
                peerID: peer.hex, name: name(of: peer), offsetNs: e.offset(at: now), errorBoundNs: e.errorBound(at: now),
                hardBoundNs: e.hardBound(at: now), delayNs: e.delay.ns, skewPPM: e.skewPPM, samples: e.sampleCount,
                lastSampleAgeNs: (now - e.lastSample).ns, source: source, trusted: resolved.trusted,
                closureErrorNs: resolved.closureErrorNs, worstClosureErrorNs: resolved.worstClosureErrorNs,
                worstClosureToleranceNs: resolved.worstClosureToleranceNs, paths: resolved.pathCount, lost: link?.lost ?? 0, rejected: link?.rejected ?? 0,
                sendStamps: link.map { $0.lastKernelStamped ? "kernel" : "agent" } ?? "none", kernelStamped: link?.kernelStamped ?? 0,
                followUpsMissed: link?.stamps.followUpsMissed ?? 0, stampsImplausible: link?.stamps.implausible ?? 0,
                delayStepNs: node.clocks.estimate(of: peer, at: now).flatMap { $0.delayStep > .zero ? $0.delayStep.ns : nil },
                requests: link?.exchangesSent ?? 0, mirrored: link?.mirrored ?? 0, unmatchedResults: link?.unmatchedResults ?? 0)
        }
        return ClockResult(localTimeNs: now.ns, hostTimeNs: hostTime(now), peers: list.sorted { ($0.name, $0.peerID) < ($1.name, $1.peerID) })
    }

    func peers(now: LocalTime) -> PeersResult {
        PeersResult(peers: node.membership.peers.values.sorted { ($0.name, $0.id) < ($1.name, $1.id) }.map { info($0, now: now) })
    }

    /// One peer as `peers` lists it.
    func info(_ p: Membership.Peer, now: LocalTime) -> PeerInfo {
        PeerInfo(
            peerID: p.id.hex, name: p.name, state: p.state.rawValue,
            addresses: p.paths.map { "\($0.endpoint)" }, preferred: p.preferred.map { "\($0)" },
            stateAgeNs: (now - p.since).ns, lastHeardAgoNs: p.lastHeard.map { (now - $0).ns },
            incarnation: p.incarnation, sources: Array(Set(p.paths.map(\.source.rawValue))).sorted())
    }
}
