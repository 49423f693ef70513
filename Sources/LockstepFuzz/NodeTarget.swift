import LockstepCore
import LockstepPeerWire

/// The protocol logic under hostile inputs: a script of events driven into a ``Node`` (and a
/// ``GroupMembers``), as a group member holding the key and a buggy local player could send them.
/// Peer messages go through `PeerMessage.decode` first, so they carry exactly what the decoder
/// lets through; player inputs carry raw numbers (the core clamps what the socket would refuse).
/// After every event the target asks everything the agent asks on every change (lead time,
/// every timeline on the local clock, clock views, deadlines). Properties: nothing traps, and
/// the next deadline is never in the past.
///
/// Script: a byte chooses the event; the bytes after it are its arguments (``FuzzInput`` gives
/// zeros past the end). Events: a peer message (sender, incarnation, length, plaintext), time
/// passing, a tick, a DNS-SD sighting, a sent or transmitted clock message, a local clock step,
/// a player's hello, load, readiness, intent, position, suspension, a CLI command, a key message.
enum NodeTarget {
    static let me = PeerID(high: 1, low: 1)
    static let peers = [PeerID(high: 2, low: 2), PeerID(high: 3, low: 3), PeerID(high: 4, low: 4), me]
    static let paths = [
        Endpoint.v4(a: 10, b: 0, c: 0, d: 2, port: 4000), Endpoint.v4(a: 10, b: 0, c: 0, d: 3, port: 4000),
        Endpoint.v4(a: 10, b: 0, c: 0, d: 2, port: 4001), Endpoint.v4(a: 127, b: 0, c: 0, d: 1, port: 4000),
    ]
    static let items = [ItemID("film")!, ItemID("other")!, ItemID(String(repeating: "x", count: ItemID.maxBytes))!]

    struct World {
        var node = Node(identity: .init(peer: NodeTarget.me, incarnation: 1, name: "fuzz"))
        var keys = GroupMembers(group: GroupIdentity(name: "fuzz", key: GroupKey(bytes: Array(repeating: 1, count: 32), epoch: 3)!), me: DeviceIdentity(rawRepresentation: Array(repeating: 7, count: 32))!)
        var now = LocalTime(ns: 1_000_000_000_000)
        var lastRequest: (exchange: UInt32, to: Endpoint)?

        mutating func apply(_ directives: [NodeDirective]) {
            for d in directives {
                if case .sendClockRequest(let exchange, let to, _) = d, exchange != 0 { lastRequest = (exchange, to) }
            }
        }
    }

    static func run(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        var w = World()
        var steps = 0
        while !input.isEmpty && steps < 256 {
            steps += 1
            step(&w, &input)
            check(&w)
        }
    }

    static func step(_ w: inout World, _ input: inout FuzzInput) {
        let op = input.byte() % 16
        let peer = peers[Int(input.byte()) % peers.count]
        let path = paths[Int(input.byte()) % paths.count]
        switch op {
        case 0, 1, 2:
            let incarnation = op == 2 ? input.integer(UInt64.self) : UInt64(input.byte() % 4) + 1
            let length = Int(input.integer(UInt16.self)) % (Envelope.maxMessageBytes + 1)
            guard let message = try? PeerMessage.decode(input.bytes(length)) else { return }
            switch message {
            case .epochKey(let epoch, let key, let removed):
                _ = w.keys.onEpochKey(epoch: epoch, key: key, removed: removed, from: peer, pairwise: input.byte() & 1 == 0, now: w.now)
            case .memberKey(let key, let name):
                _ = w.keys.onMemberKey(key, name: name, from: peer, epochByte: input.byte(), now: w.now)
            case .keyAck(let epoch):
                w.keys.onKeyAck(epoch: epoch, from: peer)
            default:
                let receivedAt = w.now + .nanoseconds(Int64(Int32(truncatingIfNeeded: input.integer(UInt32.self))))
                w.apply(w.node.onMessage(message, from: peer, incarnation: incarnation, source: path, receivedAt: receivedAt, now: w.now))
                _ = w.keys.onDatagram(from: peer, source: path, epochByte: input.byte(), now: w.now)
                _ = w.keys.onUndecryptable(from: peer, epochByte: input.byte(), source: path, now: w.now)
            }
        case 3:
            w.now += .nanoseconds(Int64(input.integer(UInt32.self)) * 1_000)
        case 4:
            w.apply(w.node.onTick(now: w.now))
            _ = w.keys.onTick(now: w.now, reachable: Array(peers))
        case 5:
            let sighting = Membership.Sighting(instance: "i\(input.byte())", interfaceIndex: UInt32(input.byte()))
            w.apply(w.node.onSighting(peer, name: "n", sighting: sighting, endpoints: [path], now: w.now))
        case 6:
            // The shell reports the t1 it stamped (and later the kernel's transmit time).
            if let r = w.lastRequest {
                w.node.onClockRequestSent(exchange: r.exchange, to: r.to, t1: w.now)
                w.apply(w.node.onTransmitted(.clockRequest(exchange: r.exchange, t1: PeerTime(ours: w.now)), to: r.to, at: w.now + .microseconds(20)))
            }
        case 7:
            w.apply(w.node.onLocalClockStep(now: w.now))
        case 8:
            let info = PlayerSession.Info(
                name: "p", canChangeRate: input.byte() & 1 == 1, outputLatency: .nanoseconds(input.integer(Int64.self)),
                startLatency: .nanoseconds(input.integer(Int64.self)), syncTolerance: .nanoseconds(input.integer(Int64.self)))
            w.apply(w.node.onPlayerHello(id: UInt32(input.byte() % 3), info: info, now: w.now))
        case 9:
            let item = items[Int(input.byte()) % items.count]
            w.apply(w.node.onPlayerLoad(id: UInt32(input.byte() % 3), item: item, metadata: ItemMetadata(), solo: input.byte() & 1 == 1, now: w.now))
        case 10:
            let readiness = PlayerStatus.Readiness(rawValue: input.byte() % 3) ?? .ready
            w.apply(w.node.onPlayerReadiness(id: UInt32(input.byte() % 3), readiness, now: w.now))
        case 11:
            w.apply(w.node.onPlayerIntent(id: UInt32(input.byte() % 3), command(&input), now: w.now))
        case 12:
            let position = MediaPosition(clamping: input.integer(Int64.self))
            let at = LocalTime(ns: input.integer(Int64.self))
            w.apply(w.node.onPlayerPosition(id: UInt32(input.byte() % 3), position: position, at: at, now: w.now))
        case 13:
            let id = UInt32(input.byte() % 3)
            if input.byte() & 1 == 0 {
                w.apply(w.node.onPlayerBeginSuspension(id: id, reason: SuspensionReason(text: ["interstitial", "interruption", "x"][Int(input.byte() % 3)]), now: w.now))
            } else {
                let position = input.byte() & 1 == 0 ? nil : MediaPosition(clamping: input.integer(Int64.self))
                w.apply(w.node.onPlayerEndSuspension(id: id, suspension: nil, proposedPosition: position, now: w.now))
            }
        case 14:
            w.apply(w.node.onCommand(command(&input), item: input.byte() & 1 == 0 ? nil : items[0], now: w.now))
        default:
            w.apply(w.node.onPlayerPlayImmediately(id: UInt32(input.byte() % 3), rate: Double(bitPattern: input.integer(UInt64.self)), now: w.now))
            if input.byte() & 1 == 0 {
                _ = try? w.keys.onRotate(newKeyBytes: Array(repeating: 2, count: 32), now: w.now)
            } else {
                _ = try? w.keys.onRemove(peer, newKeyBytes: Array(repeating: 3, count: 32), now: w.now)
            }
        }
    }

    /// A command with raw numbers (rates may be NaN or wild: the core refuses them).
    static func command(_ input: inout FuzzInput) -> GroupCommand {
        switch input.byte() % 6 {
        case 0: return .play(rate: input.byte() & 1 == 0 ? nil : Double(bitPattern: input.integer(UInt64.self)))
        case 1: return .pause
        case 2: return .seek(position: MediaPosition(clamping: input.integer(Int64.self)))
        case 3: return .setRate(Double(bitPattern: input.integer(UInt64.self)))
        case 4: return .load(items[Int(input.byte()) % items.count], ItemMetadata(duration: .nanoseconds(input.integer(Int64.self))))
        default: return .stop
        }
    }

    /// What the agent computes on every change, and the deadline property.
    static func check(_ w: inout World) {
        let node = w.node
        let now = w.now
        _ = node.leadTime(for: nil, now: now)
        let timelines = node.timelines
        for r in node.group.state.items.values {
            _ = node.leadTime(for: r.item, now: now)
            if let a = timelines.anchor(of: r, now: now) { _ = a.time + a.bound }
            _ = timelines.timeline(of: r, now: now).map { $0.position(at: now) }
        }
        for peer in node.clocks.links.keys {
            if let r = node.clocks.resolved(peer, at: now) {
                let e = r.estimate
                _ = (now - e.lastSample, e.errorBoundSpan(at: now), e.peerTime(at: now), e.localTime(at: e.peerTime(at: now)))
            }
        }
        let view = node.view
        for item in items { _ = node.coordinator.blockers(on: item, view: view) }
        let deadline = node.nextDeadline(now: now)
        require(deadline >= now, "node: next deadline \(deadline) is before now \(now)")
        if let k = w.keys.nextDeadline { _ = k - now }
    }

    /// Scripts that drive the review's crash cases (appendix A) at the edges the decoder allows.
    static var seeds: [(name: String, bytes: [UInt8])] {
        func message(_ m: PeerMessage, sender: UInt8 = 0) -> [UInt8] {
            let bytes = m.encoded()
            return [0, sender, 0, 1, UInt8(bytes.count >> 8), UInt8(bytes.count & 0xff)] + bytes + [0, 0, 0, 0, 0]
        }
        let tick: [UInt8] = [4, 0, 0]
        let later: [UInt8] = [3, 0, 0, 0, 0x98, 0x96, 0x80]  // 10 s
        let member = peers[0]
        let hello = message(.hello(name: "m", wantsReply: true))
        var out: [(String, [UInt8])] = []
        for (name, m) in SampleMessages.all { out.append(("message-" + name, hello + message(m) + tick + later + tick)) }
        let item = items[0]
        let poison: [(String, PeerMessage)] = [
            ("stamp", .operation(GroupOperation(stamp: Stamp(time: Limits.instantNs.upperBound, origin: member, incarnation: 1, seq: 1), heads: [], item: item, command: .pause, basis: member, at: PeerTime(ns: 0), originAt: PeerTime(ns: 0)), wantsAck: true)),
            ("latency", .participant(ParticipantRecord(peer: member, incarnation: 1, version: 1, players: [PlayerStatus(playerID: 1, name: "x", itemHash: item.stableHash, readiness: .loading, startLatency: .seconds(10))]))),
            ("load-min", .operation(GroupOperation(stamp: Stamp(time: Limits.instantNs.lowerBound, origin: member, incarnation: 1, seq: 1), heads: [], item: item, command: .load(ItemMetadata()), basis: member, at: PeerTime(ns: Limits.instantNs.lowerBound), originAt: PeerTime(ns: Limits.instantNs.upperBound)), wantsAck: false)),
            ("waiting-max", .operation(GroupOperation(stamp: Stamp(time: 0, origin: member, incarnation: 1, seq: 1), heads: [], item: item, command: .play(rate: 16, waits: true), basis: PeerID(high: 9, low: 9), at: PeerTime(ns: Limits.instantNs.upperBound), originAt: PeerTime(ns: Limits.instantNs.lowerBound), basisBound: .seconds(10), result: Timeline(phase: .waiting, anchorTime: PeerTime(ns: Limits.instantNs.upperBound), position: .max, rate: 16)), wantsAck: false)),
            ("timeline", .operation(GroupOperation(stamp: Stamp(time: 5, origin: me, incarnation: 1, seq: 1), heads: [], item: item, command: .play(rate: 16, waits: false), basis: me, at: PeerTime(ns: Limits.instantNs.lowerBound), originAt: PeerTime(ns: Limits.instantNs.lowerBound), result: Timeline(phase: .playing, anchorTime: PeerTime(ns: Limits.instantNs.lowerBound), position: .zero, rate: 16)), wantsAck: false)),
            ("register", .itemRegister(ItemRecord(item: item, timeline: Timeline(phase: .playing, anchorTime: PeerTime(ns: Limits.instantNs.upperBound), position: .max, rate: 16), clock: PeerID(high: 9, low: 9), alternate: RelayedAnchor(via: member, anchorTime: PeerTime(ns: Limits.instantNs.lowerBound), bound: .seconds(10)), action: .play, stamp: Stamp(time: Limits.instantNs.upperBound, origin: member, incarnation: 1, seq: Limits.counter.upperBound)))),
            ("report", .clockReport(ClockReport(entries: [.init(peer: peers[1], incarnation: 1, estimate: ReportedEstimate(reference: PeerTime(ns: Limits.instantNs.upperBound), offsetNs: -Limits.reportOffsetNs, skewPPM: Limits.reportSkewPPM.upperBound, errorBoundNs: 1e12, errorGrowthPPM: 1e6, hardBoundNs: 1e12, hardGrowthPPM: 1e6, delay: .seconds(10), sampleCount: 1, lastSample: PeerTime(ns: Limits.instantNs.lowerBound)))]))),
            ("reply-wild", .clockReply(exchange: 1, echo: .min, t2: PeerTime(ns: Limits.instantNs.upperBound), t3: PeerTime(ns: Limits.instantNs.lowerBound))),
        ]
        for (name, m) in poison {
            // A measured member, a participant on the item, the poison, then time and a player.
            let measured = hello + tick + [6, 0, 0] + message(.clockReply(exchange: 1, echo: 0, t2: PeerTime(ns: 1_000_000_000_000), t3: PeerTime(ns: 1_000_000_000_000)))
            let player: [UInt8] = [8, 0, 0, 1] + Array(repeating: 0x7f, count: 24) + [0] + [9, 0, 0, 0, 0, 0] + [10, 0, 0, 1, 0] + [11, 0, 0, 0, 0]
            out.append(("poison-" + name, measured + message(m) + tick + player + later + tick + [12, 0, 0] + Array(repeating: 0x80, count: 16) + [0]))
        }
        return out
    }
}
