import Testing

@testable import LockstepCore

/// The crash cases of the security review (its appendix A, at commit 3d72d82): authenticated
/// messages a group member could send, and a local player's numbers, that trapped every agent in
/// core arithmetic. Each is driven into a ``Node`` twice: with the most extreme value the
/// decoders now let through (``Limits``), and with the raw extreme the old decoder accepted (the
/// core must not trap even for values no decoder would pass). A test passes when nothing traps
/// and the value is refused, clamped or harmless, as its expectations say.
@Suite("Hostile inputs (review appendix A)")
struct HostileInputTests {
    static let me = PeerID(high: 1, low: 1)
    static let member = PeerID(high: 2, low: 2)
    static let far = PeerID(high: 3, low: 3)
    static let source = Endpoint.v4(a: 10, b: 0, c: 0, d: 2, port: 4000)
    static let film = ItemID("film")!

    /// A node that has heard from `member` (incarnation 5) and, with `measured`, measured its clock
    /// in one honest exchange (the member's clock `peerOffset` ns ahead).
    struct Victim {
        var node = Node(identity: .init(peer: HostileInputTests.me, incarnation: 1, name: "victim"))
        var now = LocalTime(ns: 1_000_000_000_000)

        mutating func step(_ message: PeerMessage, from sender: PeerID = HostileInputTests.member, incarnation: UInt64 = 5) -> [NodeDirective] {
            defer { now += .milliseconds(1) }
            return node.onMessage(message, from: sender, incarnation: incarnation, source: HostileInputTests.source, receivedAt: now, now: now)
        }

        /// One honest clock exchange with `member`.
        mutating func measure(peerOffset: Int64 = 0) {
            _ = step(.hello(name: "m", wantsReply: false))
            for d in node.onTick(now: now) {
                guard case .sendClockRequest(let exchange, _, _) = d, exchange != 0 else { continue }
                node.onClockRequestSent(exchange: exchange, to: HostileInputTests.source, t1: now)
                let t2 = PeerTime(ns: now.ns + 50_000 + peerOffset)
                let t4 = now + .microseconds(100)
                _ = node.onMessage(
                    .clockReply(exchange: exchange, echo: now.ns, t2: t2, t3: t2), from: HostileInputTests.member, incarnation: 5,
                    source: HostileInputTests.source, receivedAt: t4, now: t4)
            }
            now += .milliseconds(1)
        }

        /// Everything the agent computes on every group change, and a tick: none may trap.
        mutating func exercise() {
            _ = node.leadTime(for: nil, now: now)
            _ = node.leadTime(for: HostileInputTests.film, now: now)
            let timelines = node.timelines
            for r in node.group.state.items.values {
                _ = timelines.anchor(of: r, now: now)
                _ = timelines.timeline(of: r, now: now).map { $0.position(at: now) }
            }
            for peer in node.clocks.links.keys {
                if let e = node.clocks.resolved(peer, at: now)?.estimate { _ = (now - e.lastSample, e.errorBoundSpan(at: now), e.peerTime(at: now)) }
            }
            _ = node.nextDeadline(now: now)
            _ = node.onTick(now: now)
            now += .seconds(10)
            _ = node.onTick(now: now)
            _ = node.nextDeadline(now: now)
        }
    }

    /// The member's operations on `film`: a load (number 1), then `command` (number 2) at `at`.
    static func ops(
        _ command: OperationCommand, at: Int64, time: Int64 = 1_000_000_000_000, basis: PeerID = member, origin: PeerID = member, incarnation: UInt64 = 5,
        result: Timeline<PeerTime>? = nil
    ) -> [GroupOperation] {
        let replica = ReplicaID(peer: origin, incarnation: incarnation)
        let load = GroupOperation(
            stamp: Stamp(time: time, origin: origin, incarnation: incarnation, seq: 1), heads: [], item: film, command: .load(ItemMetadata()), basis: basis,
            at: PeerTime(ns: at), originAt: PeerTime(ns: at))
        let next = GroupOperation(
            stamp: Stamp(time: time.addingSaturating(1), origin: origin, incarnation: incarnation, seq: 2), heads: [OperationID(replica: replica, seq: 1)], item: film,
            command: command, basis: basis, at: PeerTime(ns: at), originAt: PeerTime(ns: at), result: result)
        return [load, next]
    }

    @Test("stamp: an operation stamped far ahead of every known clock is refused and counted; the next local command wins", arguments: [Limits.instantNs.upperBound, Int64.max])
    func stamp(_ time: Int64) {
        var v = Victim()
        let poisoned = Self.ops(.pause, at: 0, time: time)[0]
        let d = v.step(.operation(poisoned, wantsAck: false))
        #expect(d.contains(.dropped(.stampTooFarAhead, from: Self.member)))
        #expect(v.node.group.state.items[Self.film] == nil)
        _ = v.node.onCommand(.load(ItemID("other")!, ItemMetadata()), now: v.now)
        _ = v.node.onCommand(.pause, now: v.now)
        #expect(v.node.group.state.items[ItemID("other")!]?.stamp.origin == Self.me)
        v.exercise()
    }

    @Test("an operation stamped just within the lead is taken, and the next local command is stamped after it")
    func stampWithinBound() {
        var v = Victim()
        v.measure()
        let time = v.now.ns + Limits.stampLeadNs - 1_000_000
        for op in Self.ops(.pause, at: v.now.ns, time: time) { _ = v.step(.operation(op, wantsAck: false)) }
        #expect(v.node.group.log.time == time + 1)
        let d = v.node.onCommand(.seek(position: .zero), item: Self.film, now: v.now)
        #expect(v.node.group.state.items[Self.film]?.stamp.time == time + 2, "\(d)")
    }

    @Test("latency: a member's player with the largest start latency makes the lead its cap, not a trap", arguments: [Limits.latencyNs.upperBound, Int64.max])
    func latency(_ ns: Int64) {
        var v = Victim()
        _ = v.step(.hello(name: "m", wantsReply: false))
        let player = PlayerStatus(playerID: 1, name: "x", itemHash: nil, readiness: .ready, startLatency: .nanoseconds(ns))
        _ = v.step(.participant(ParticipantRecord(peer: Self.member, incarnation: 5, version: 1, players: [player])))
        #expect(v.node.leadTime(for: nil, now: v.now) == LeadTime.Configuration().cap)
        v.exercise()
    }

    @Test("player latency: a local player's hello with Int64.max latencies is clamped to 10 s")
    func playerLatency() {
        var v = Victim()
        let info = PlayerSession.Info(name: "p", outputLatency: .max, startLatency: .max, syncTolerance: .max)
        #expect(info.startLatency == .seconds(10) && info.outputLatency == .seconds(10) && info.syncTolerance == .seconds(10))
        _ = v.node.onPlayerHello(id: 1, info: info, now: v.now)
        #expect(v.node.leadTime(for: nil, now: v.now) == LeadTime.Configuration().cap)
        v.exercise()
    }

    @Test("delay gate: a reply whose echoed t1 claims a round trip near 2^61 ns is refused as a wrong echo")
    func delayGate() {
        var v = Victim()
        _ = v.step(.hello(name: "m", wantsReply: false))
        for i in 0..<6 {
            for d in v.node.onTick(now: v.now) {
                guard case .sendClockRequest(let exchange, _, _) = d, exchange != 0 else { continue }
                v.node.onClockRequestSent(exchange: exchange, to: Self.source, t1: v.now)
                let t4 = v.now + .microseconds(100)
                let echo = i == 0 ? v.now.ns : t4.ns - ((1 << 61) - 2_000_000_000)
                let d = v.node.onMessage(
                    .clockReply(exchange: exchange, echo: echo, t2: PeerTime(ns: t4.ns), t3: PeerTime(ns: t4.ns)), from: Self.member, incarnation: 5,
                    source: Self.source, receivedAt: t4, now: t4)
                if i > 0 { #expect(d.contains(.dropped(.wrongEcho, from: Self.member))) }
            }
            v.now += .milliseconds(30)
        }
        #expect(v.node.clocks.links[Self.member]?.wrongEchoes == 5)
        v.exercise()
    }

    @Test("a reply with the right echo but peer times at the ends of the range is an invalid sample, not a trap", arguments: [Limits.instantNs.upperBound, Int64.max, Int64.min])
    func wildReplyTimes(_ ns: Int64) {
        var v = Victim()
        _ = v.step(.hello(name: "m", wantsReply: false))
        for d in v.node.onTick(now: v.now) {
            guard case .sendClockRequest(let exchange, _, _) = d, exchange != 0 else { continue }
            v.node.onClockRequestSent(exchange: exchange, to: Self.source, t1: v.now)
            let t4 = v.now + .microseconds(100)
            _ = v.node.onMessage(
                .clockReply(exchange: exchange, echo: v.now.ns, t2: PeerTime(ns: ns), t3: PeerTime(ns: ns)), from: Self.member, incarnation: 5,
                source: Self.source, receivedAt: t4, now: t4)
        }
        #expect(v.node.clocks.estimate(of: Self.member, at: v.now) == nil)
        v.exercise()
    }

    @Test("report: a clock report with the widest bound about a peer we do not measure gives a capped lead", arguments: [Limits.reportBoundNs.upperBound, 1e300])
    func report(_ bound: Double) {
        var v = Victim()
        v.measure()
        _ = v.node.onMessage(.hello(name: "f", wantsReply: false), from: Self.far, incarnation: 7, source: Self.source, receivedAt: v.now, now: v.now)
        let wild = ReportedEstimate(reference: PeerTime(ns: v.now.ns), offsetNs: 0, errorBoundNs: bound, hardBoundNs: bound, delay: .zero)
        _ = v.step(.clockReport(ClockReport(entries: [.init(peer: Self.far, incarnation: 7, estimate: wild)])))
        #expect(v.node.leadTime(for: nil, now: v.now) <= LeadTime.Configuration().cap)
        v.exercise()
    }

    @Test("waiting and deadline: a waiting timeline forged on this node's clock, anchored at either end of time", arguments: [
        Limits.instantNs.lowerBound, Limits.instantNs.upperBound, Int64.min, Int64.max - 1,
    ])
    func waiting(_ anchor: Int64) {
        var v = Victim()
        _ = v.step(.hello(name: "m", wantsReply: false))
        let loading = PlayerStatus(playerID: 1, name: "x", itemHash: Self.film.stableHash, readiness: .loading)
        _ = v.step(.participant(ParticipantRecord(peer: Self.member, incarnation: 5, version: 1, players: [loading])))
        for op in Self.ops(.play(rate: nil, waits: true), at: anchor, time: v.now.ns, basis: Self.me) { _ = v.step(.operation(op, wantsAck: false)) }
        #expect(v.node.group.state.items[Self.film]?.timeline.phase == .waiting)
        #expect(v.node.nextDeadline(now: v.now) >= v.now)
        v.exercise()
    }

    @Test("timeline: a timeline playing at rate 16 from 2^62 ns ago gives a clamped position", arguments: [Int64(1) << 62, Int64.max])
    func timeline(_ distance: Int64) {
        var v = Victim()
        v.measure()
        for op in Self.ops(.play(rate: 16, waits: false), at: v.now.ns.subtractingSaturating(distance), time: v.now.ns) { _ = v.step(.operation(op, wantsAck: false)) }
        let r = v.node.group.state.items[Self.film]!
        #expect(r.timeline.phase == .playing)
        let position = v.node.timelines.timeline(of: r, now: v.now)?.position(at: v.now)
        #expect(position == .max)
        v.exercise()
    }

    @Test("alternate: a register on an unknown clock, placed through the widest alternate bound, keeps the bound", arguments: [Limits.relayBoundNs.upperBound, Int64.max])
    func alternate(_ bound: Int64) {
        var v = Victim()
        v.measure()
        let r = ItemRecord(
            item: Self.film, timeline: Timeline(phase: .paused, anchorTime: PeerTime(ns: 0), position: .zero, rate: 1), clock: PeerID(high: 9, low: 9),
            alternate: RelayedAnchor(via: Self.member, anchorTime: PeerTime(ns: v.now.ns), bound: .nanoseconds(bound)), action: .pause,
            stamp: Stamp(time: v.now.ns, origin: Self.member, incarnation: 5, seq: 1))
        _ = v.step(.itemRegister(r))
        let anchor = v.node.timelines.anchor(of: v.node.group.state.items[Self.film]!, now: v.now)
        #expect(anchor != nil && anchor!.bound >= .nanoseconds(bound))
        v.exercise()
    }

    @Test("anchor: a timeline anchored at the far end of the peer's clock converts, saturating", arguments: [Limits.instantNs.upperBound, Int64.max])
    func anchor(_ ns: Int64) {
        var v = Victim()
        v.measure(peerOffset: -1_000_000_000)
        for op in Self.ops(.pause, at: ns, time: v.now.ns) { _ = v.step(.operation(op, wantsAck: false)) }
        let anchor = v.node.timelines.anchor(of: v.node.group.state.items[Self.film]!, now: v.now)
        #expect(anchor != nil)
        v.exercise()
    }

    @Test("report-last: a report whose last sample composes to near Int64.min gives an age, not a trap", arguments: [Limits.instantNs.lowerBound, Int64.min])
    func reportLast(_ last: Int64) {
        var v = Victim()
        v.measure(peerOffset: -1_000_000_000)
        _ = v.node.onMessage(.hello(name: "f", wantsReply: false), from: Self.far, incarnation: 7, source: Self.source, receivedAt: v.now, now: v.now)
        let e = ReportedEstimate(reference: PeerTime(ns: v.now.ns), offsetNs: 0, errorBoundNs: 1_000, hardBoundNs: 1_000, delay: .microseconds(1), lastSample: PeerTime(ns: last))
        _ = v.step(.clockReport(ClockReport(entries: [.init(peer: Self.far, incarnation: 7, estimate: e)])))
        if let resolved = v.node.clocks.resolved(Self.far, at: v.now) {
            #expect(v.now - resolved.estimate.lastSample > .zero)
        }
        v.exercise()
    }

    @Test("player position: a report at either end of media and of time corrects, or not, without trapping", arguments: [
        (MediaPosition.zero, Limits.instantNs.lowerBound), (MediaPosition.max, Limits.instantNs.upperBound), (MediaPosition.max, Int64.min),
    ])
    func playerPosition(_ position: MediaPosition, _ at: Int64) {
        var v = Victim()
        _ = v.node.onPlayerHello(id: 1, info: .init(name: "p", canChangeRate: true), now: v.now)
        _ = v.node.onPlayerLoad(id: 1, item: Self.film, metadata: ItemMetadata(), solo: false, now: v.now)
        _ = v.node.onPlayerReadiness(id: 1, .ready, now: v.now)
        _ = v.node.onPlayerPlayImmediately(id: 1, rate: nil, now: v.now)
        v.now += .seconds(3)
        _ = v.node.onTick(now: v.now)
        _ = v.node.onPlayerPosition(id: 1, position: position, at: LocalTime(ns: at), now: v.now)
        v.exercise()
    }

    @Test("a participant record that speaks for this node, newer than its own, is refused and counted")
    func speaksForUs() {
        var v = Victim()
        let forged = ParticipantRecord(peer: Self.me, incarnation: 9, version: 9, players: [])
        #expect(v.step(.participant(forged)).contains(.dropped(.speaksForUs, from: Self.member)))
        #expect(v.node.group.participants[Self.me]?.version == 0)
    }
}
