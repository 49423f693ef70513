#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Foundation
import LockstepCore
import LockstepPeerWire
import LockstepPlayerProtocol

/// `lockstep-bench member`: a malicious group member for the faults benchmark (run inside a lab
/// host). It holds the group's key (from its join code) and seals crafted messages under its own
/// peer id: the values of the security review's appendix A, both as the old decoder let them
/// through (the decoder must refuse them: `dropped_out_of_range`) and at the very edges the
/// decoder allows (the core must survive them: refused records, wrong echoes, a member speaking
/// for the victim, wild clock reports, records of another item anchored at the ends of time).
/// With `--impersonate-to`, it also sends another agent one datagram under the victim's own id
/// with an incarnation an hour ahead (the review's incarnation poisoning), once.
struct MemberCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "member", abstract: "Send a victim crafted messages sealed with the group key (a fault-injection helper).")

    @Option(help: "Target IPv4 address.") var host: String
    @Option(help: "Target UDP port.") var port: UInt16
    @Option(help: "The victim's peer id (32 hex digits): records and reports name it.") var victim: String
    @Option(help: "Messages per second.") var rate = 200
    @Option(help: "Seconds.") var seconds = 10.0
    @Option(help: "Also send this agent (IPV4:PORT) one datagram as the victim itself, with an incarnation an hour ahead.") var impersonateTo: String?

    func run() throws {
        guard let code = ProcessInfo.processInfo.environment["LOCKSTEP_JOIN_CODE"], let group = try? JoinCode.parse(code, name: "member") else {
            throw ValidationError("LOCKSTEP_JOIN_CODE must hold the group's join code")
        }
        guard let victimID = PeerID(hex: victim) else { throw ValidationError("--victim must be 32 hex digits") }
        let me = PeerID.random()
        let incarnation = UInt64(Date().timeIntervalSince1970 * 1e6)
        let sealer = EnvelopeSealer(sender: me, incarnation: incarnation, key: group.currentKey)
        let messages = Self.poison(victim: victimID, member: me)
        let sender = try UDPSender()
        let target = try UDPSender.address(host, port)
        // Introduce ourselves, as a member would.
        sender.send(sealer.seal(PeerMessage.hello(name: "member", wantsReply: true).encoded()), to: target)
        if let other = impersonateTo {
            guard let endpoint = Endpoint(other), case .v4 = endpoint else { throw ValidationError("--impersonate-to takes IPV4:PORT") }
            let forged = EnvelopeSealer(sender: victimID, incarnation: incarnation + 3_600_000_000, key: group.currentKey)
            sender.send(forged.seal(PeerMessage.hello(name: "forged", wantsReply: false).encoded()), to: try UDPSender.address(endpoint.host, endpoint.port))
        }
        let sent = UDPSender.paced(rate: rate, seconds: seconds, napMicros: 2_000) { n in sender.send(sealer.seal(messages[n % messages.count]), to: target) }
        print("sent \(sent) crafted messages (\(messages.count) kinds) in \(seconds) s")
    }

    /// The crafted messages, as plaintexts.
    static func poison(victim: PeerID, member: PeerID) -> [[UInt8]] {
        let other = ItemID("poison")!
        func record(_ phase: TimelinePhase, anchor: Int64, lamport: UInt64, origin: PeerID, rate: Double = 1) -> ItemRecord {
            ItemRecord(
                item: other, timeline: Timeline(phase: phase, anchorTime: PeerTime(ns: anchor), position: .zero, rate: rate), action: .pause,
                stamp: Stamp(lamport: lamport, origin: origin, incarnation: 1), version: VersionVector())
        }
        let wild = ReportedEstimate(
            reference: PeerTime(ns: Limits.instantNs.upperBound), offsetNs: -Limits.reportOffsetNs, skewPPM: Limits.reportSkewPPM.upperBound,
            errorBoundNs: Limits.reportBoundNs.upperBound, errorGrowthPPM: Limits.reportGrowthPPM.upperBound, hardBoundNs: Limits.reportBoundNs.upperBound,
            hardGrowthPPM: Limits.reportGrowthPPM.upperBound, delay: .seconds(10), sampleCount: 1, lastSample: PeerTime(ns: Limits.instantNs.lowerBound))
        let beyond = ReportedEstimate(reference: PeerTime(ns: 0), offsetNs: 0, errorBoundNs: 1e300, hardBoundNs: 1e300, delay: .zero)
        let player = PlayerStatus(playerID: 9, name: "member", itemHash: other.stableHash, readiness: .loading, startLatency: .seconds(10))
        let messages: [PeerMessage] = [
            // Past the decoder's ranges (review appendix A, as the old decoder accepted them).
            .itemRecord(record(.paused, anchor: 0, lamport: .max, origin: member), relay: nil, wantsAck: true),
            .itemRecord(record(.waiting, anchor: .min, lamport: 5, origin: victim), relay: nil, wantsAck: false),
            .itemRecord(record(.paused, anchor: 0, lamport: 5, origin: PeerID(high: 9, low: 9)), relay: RelayAnchor(anchorTime: PeerTime(ns: .max), errorBound: .max), wantsAck: false),
            .clockReport(ClockReport(entries: [.init(peer: victim, incarnation: 1, estimate: beyond)])),
            .clockRequest(exchange: 1, t1: PeerTime(ns: .max)),
            // At the edges the decoder allows: the core must refuse or absorb them.
            .itemRecord(record(.paused, anchor: 0, lamport: Limits.counter.upperBound, origin: member), relay: nil, wantsAck: true),
            .itemRecord(record(.waiting, anchor: Limits.instantNs.lowerBound, lamport: 7, origin: victim), relay: nil, wantsAck: false),
            .itemRecord(record(.playing, anchor: Limits.instantNs.upperBound, lamport: 8, origin: member, rate: 16), relay: nil, wantsAck: false),
            .participant(ParticipantRecord(peer: member, incarnation: 1, version: 1, players: [player])),
            .participant(ParticipantRecord(peer: victim, incarnation: Limits.counter.upperBound, version: 1, players: [])),
            .clockReport(ClockReport(entries: [.init(peer: victim, incarnation: Limits.counter.upperBound, estimate: wild)])),
            .clockReply(exchange: 1, echo: .min, t2: PeerTime(ns: Limits.instantNs.upperBound), t3: PeerTime(ns: Limits.instantNs.lowerBound)),
            .clockFollowUp(exchange: 1, echo: .max, t3: PeerTime(ns: Limits.instantNs.lowerBound)),
            .keyUpdate(epoch: .max, key: Array(repeating: 0xee, count: 32)),
        ]
        return messages.map { $0.encoded() }
    }
}
