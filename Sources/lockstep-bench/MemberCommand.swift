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
/// With `--impersonate-to`, it also sends another agent datagrams under the victim's own id, once
/// each: a `goodbye` under the victim's current incarnation (`--victim-incarnation`, refused as
/// `group_key_from_session_peer` once the two are in session), a `hello` with an incarnation an
/// hour ahead (the review's incarnation poisoning) and a `goodbye` under it (`not_proven`).
struct MemberCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "member", abstract: "Send a victim crafted messages sealed with the group key (a fault-injection helper).")

    @Option(help: "Target IPv4 address.") var host: String
    @Option(help: "Target UDP port.") var port: UInt16
    @Option(help: "The victim's peer id (32 hex digits): records and reports name it.") var victim: String
    @Option(help: "Messages per second.") var rate = 200
    @Option(help: "Seconds.") var seconds = 10.0
    @Option(help: "Also send this agent (IPV4:PORT) datagrams as the victim itself: with an incarnation an hour ahead, and with its own.") var impersonateTo: String?
    @Option(help: "The victim's incarnation, for --impersonate-to.") var victimIncarnation: UInt64?

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
            let to = try UDPSender.address(endpoint.host, endpoint.port)
            // Sequence numbers far ahead of the victim's own: past the replay window.
            if let real = victimIncarnation {
                sender.send(EnvelopeSealer(sender: victimID, incarnation: real, key: group.currentKey, after: 1 << 40).seal(PeerMessage.goodbye.encoded()), to: to)
            }
            let forged = EnvelopeSealer(sender: victimID, incarnation: incarnation + 3_600_000_000, key: group.currentKey)
            sender.send(forged.seal(PeerMessage.hello(name: "forged", wantsReply: false).encoded()), to: to)
            sender.send(forged.seal(PeerMessage.goodbye.encoded()), to: to)
        }
        let sent = UDPSender.paced(rate: rate, seconds: seconds, napMicros: 2_000) { n in sender.send(sealer.seal(messages[n % messages.count]), to: target) }
        print("sent \(sent) crafted messages (\(messages.count) kinds) in \(seconds) s")
    }

    /// The crafted messages, as plaintexts.
    static func poison(victim: PeerID, member: PeerID) -> [[UInt8]] {
        let other = ItemID("poison")!
        func op(_ command: OperationCommand, time: Int64, seq: UInt64, at: Int64, basis: PeerID, result: Timeline<PeerTime>? = nil) -> GroupOperation {
            GroupOperation(
                stamp: Stamp(time: time, origin: member, incarnation: 1, seq: seq), heads: [], item: other, command: command, basis: basis,
                at: PeerTime(ns: at), originAt: PeerTime(ns: at), result: result)
        }
        let wild = ReportedEstimate(
            reference: PeerTime(ns: Limits.instantNs.upperBound), offsetNs: -Limits.reportOffsetNs, skewPPM: Limits.reportSkewPPM.upperBound,
            errorBoundNs: Limits.reportBoundNs.upperBound, errorGrowthPPM: Limits.reportGrowthPPM.upperBound, hardBoundNs: Limits.reportBoundNs.upperBound,
            hardGrowthPPM: Limits.reportGrowthPPM.upperBound, delay: .seconds(10), sampleCount: 1, lastSample: PeerTime(ns: Limits.instantNs.lowerBound))
        let beyond = ReportedEstimate(reference: PeerTime(ns: 0), offsetNs: 0, errorBoundNs: 1e300, hardBoundNs: 1e300, delay: .zero)
        let player = PlayerStatus(playerID: 9, name: "member", itemHash: other.stableHash, readiness: .loading, startLatency: .seconds(10))
        let messages: [PeerMessage] = [
            // Past the decoder's ranges (review appendix A, as the old decoder accepted them).
            .operation(op(.pause, time: .max, seq: .max, at: 0, basis: member), wantsAck: true),
            .operation(op(.load(ItemMetadata()), time: 5, seq: 1, at: .min, basis: victim), wantsAck: false),
            .operation(op(.rate(1e300), time: 5, seq: 1, at: 0, basis: PeerID(high: 9, low: 9)), wantsAck: false),
            .clockReport(ClockReport(entries: [.init(peer: victim, incarnation: 1, estimate: beyond)])),
            .clockRequest(exchange: 1, t1: PeerTime(ns: .max)),
            .clockResult(exchange: 1, echo: 0, t1: PeerTime(ns: 10), t4: PeerTime(ns: 5)),
            .interleavedRequest(exchange: 1, t1: PeerTime(ns: 0), result: ExchangeResult(exchange: 1, echo: 0, t1: PeerTime(ns: 10), t4: PeerTime(ns: 5))),
            .interleavedReply(exchange: 1, echo: 0, t2: PeerTime(ns: 0), t3: PeerTime(ns: 0), followUp: ClockFollowUp(exchange: 1, echo: 0, t3: PeerTime(ns: .min))),
            // At the edges the decoder allows: the core must refuse or absorb them.
            // A number no other crafted operation takes: refused every time, never a duplicate.
            .operation(op(.pause, time: Limits.instantNs.upperBound, seq: 9, at: 0, basis: member), wantsAck: true),
            .operation(
                GroupOperation(
                    stamp: Stamp(time: 0, origin: member, incarnation: 1, seq: 8), heads: [OperationID(replica: ReplicaID(peer: member, incarnation: 1), seq: 8)],
                    item: other, command: .pause, basis: member, at: PeerTime(ns: 0), originAt: PeerTime(ns: 0)), wantsAck: true),
            .operation(op(.play(rate: 16, waits: true), time: Limits.instantNs.lowerBound, seq: 1, at: Limits.instantNs.lowerBound, basis: victim), wantsAck: false),
            .operation(
                op(.seek(.max), time: Limits.instantNs.lowerBound, seq: 2, at: Limits.instantNs.upperBound, basis: member,
                    result: Timeline(phase: .playing, anchorTime: PeerTime(ns: Limits.instantNs.upperBound), position: .max, rate: 16)), wantsAck: false),
            .participant(ParticipantRecord(peer: member, incarnation: 1, version: 1, players: [player])),
            .participant(ParticipantRecord(peer: victim, incarnation: Limits.counter.upperBound, version: 1, players: [])),
            .clockReport(ClockReport(entries: [.init(peer: victim, incarnation: Limits.counter.upperBound, estimate: wild)])),
            .clockReply(exchange: 1, echo: .min, t2: PeerTime(ns: Limits.instantNs.upperBound), t3: PeerTime(ns: Limits.instantNs.lowerBound)),
            .clockFollowUp(exchange: 1, echo: .max, t3: PeerTime(ns: Limits.instantNs.lowerBound)),
            .clockResult(exchange: 1, echo: .max, t1: PeerTime(ns: Limits.instantNs.upperBound - 1), t4: PeerTime(ns: Limits.instantNs.upperBound)),
            .interleavedRequest(
                exchange: .max, t1: PeerTime(ns: Limits.instantNs.lowerBound),
                result: ExchangeResult(exchange: 1, echo: .min, t1: PeerTime(ns: Limits.instantNs.lowerBound), t4: PeerTime(ns: Limits.instantNs.lowerBound + Limits.clockResultRoundTripNs))),
            .interleavedReply(
                exchange: 1, echo: .max, t2: PeerTime(ns: Limits.instantNs.lowerBound), t3: PeerTime(ns: Limits.instantNs.upperBound),
                followUp: ClockFollowUp(exchange: .max, echo: .min, t3: PeerTime(ns: Limits.instantNs.upperBound))),
            .epochKey(epoch: .max, key: Array(repeating: 0xee, count: 32), removed: [victim]),
            .memberKey(key: Array(repeating: 0xee, count: 32), name: "not its own key"),
        ]
        return messages.map { $0.encoded() }
    }
}
