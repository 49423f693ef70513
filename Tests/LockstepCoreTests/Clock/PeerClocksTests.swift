import Testing

@testable import LockstepCore

/// The clock protocol instance alone: inputs in, directives out, no network.
@Suite("Peer clocks")
struct PeerClocksTests {
    static let me = PeerID(high: 0, low: 1)
    static let bob = PeerID(high: 0, low: 2)
    static let carol = PeerID(high: 0, low: 3)
    static let bobPath = Endpoint.v4(a: 10, b: 0, c: 0, d: 2, port: 4000)
    static let otherPath = Endpoint.v4(a: 10, b: 0, c: 0, d: 9, port: 4000)
    static let t0 = LocalTime(ns: 50_000_000_000)
    static let routes = [bob: PeerClocks.Route(endpoint: bobPath, incarnation: 7, vetted: true)]

    /// Clocks that measure `bob`, with one exchange sent at `t0` (returned: its exchange id).
    static func measuring(_ configuration: PeerClocks.Configuration = .init(), alsoReachable: [PeerID] = []) -> (PeerClocks, UInt32) {
        var c = PeerClocks(me: me, configuration: configuration)
        c.onPeerReachable(bob, now: t0)
        for peer in alsoReachable { c.onPeerReachable(peer, now: t0) }
        guard case .sendRequest(let exchange, let to, _)? = c.onTick(now: t0, routes: routes).first else { return (c, 0) }
        precondition(to == bobPath)
        c.onRequestSent(exchange: exchange, to: bobPath, t1: t0)
        return (c, exchange)
    }

    @Test("a request is answered at once with its t1 echoed and its arrival time, to where it came from")
    func answers() {
        var c = PeerClocks(me: Self.me)
        let d = c.onRequest(exchange: 4, t1: PeerTime(ns: 123), receivedAt: Self.t0, from: Self.otherPath)
        #expect(d == [.sendReply(exchange: 4, echo: 123, t2: Self.t0, to: Self.otherPath)])
    }

    @Test("a reachable peer is measured at once and then every 25 ms during the burst")
    func burst() {
        var c = PeerClocks(me: Self.me)
        c.onPeerReachable(Self.bob, now: Self.t0)
        let first = c.onTick(now: Self.t0, routes: Self.routes)
        #expect(first.contains(.sendRequest(exchange: 1, to: Self.bobPath)))
        #expect(!c.onTick(now: Self.t0 + .milliseconds(24), routes: Self.routes).contains { if case .sendRequest = $0 { true } else { false } })
        #expect(c.onTick(now: Self.t0 + .milliseconds(25), routes: Self.routes).contains(.sendRequest(exchange: 2, to: Self.bobPath)))
        #expect(c.nextDeadline(now: Self.t0 + .milliseconds(25), routes: Self.routes) == Self.t0 + .milliseconds(50))
    }

    @Test("a reply echoing the t1 the request carried becomes a sample and an estimate")
    func sample() {
        var (c, exchange) = Self.measuring()
        let d = c.onReply(
            from: Self.bob, exchange: exchange, echo: Self.t0.ns, t2: PeerTime(ns: Self.t0.ns + 5_050_000), t3: PeerTime(ns: Self.t0.ns + 5_060_000),
            receivedAt: Self.t0 + .microseconds(110), source: Self.bobPath, now: Self.t0 + .microseconds(110))
        #expect(d.isEmpty)
        let e = c.estimate(of: Self.bob, at: Self.t0)
        #expect(e != nil && abs(e!.offsetNs - 5_000_000) < 1)
        #expect(c.roundTrip(to: Self.bob, at: Self.t0) == .microseconds(100))
    }

    @Test("a reply echoing another t1 (replayed or forged) is refused and counted, and is no sample")
    func wrongEcho() {
        var (c, exchange) = Self.measuring()
        let d = c.onReply(
            from: Self.bob, exchange: exchange, echo: Self.t0.ns - 1, t2: PeerTime(ns: 1), t3: PeerTime(ns: 2), receivedAt: Self.t0 + .microseconds(110),
            source: Self.bobPath, now: Self.t0 + .microseconds(110))
        #expect(d == [.refusedReply(from: Self.bob)])
        #expect(c.links[Self.bob]?.wrongEchoes == 1)
        #expect(c.estimate(of: Self.bob, at: Self.t0) == nil)
    }

    @Test("a reply that comes back on another path than the request took is no sample of this path")
    func otherPath() {
        var (c, exchange) = Self.measuring()
        _ = c.onReply(
            from: Self.bob, exchange: exchange, echo: Self.t0.ns, t2: PeerTime(ns: Self.t0.ns), t3: PeerTime(ns: Self.t0.ns),
            receivedAt: Self.t0 + .microseconds(110), source: Self.otherPath, now: Self.t0 + .microseconds(110))
        #expect(c.estimate(of: Self.bob, at: Self.t0) == nil)
    }

    @Test("a reply this node sent is followed by its kernel transmit time, for the requester")
    func followUp() {
        var c = PeerClocks(me: Self.me)
        #expect(c.onReplyTransmitted(exchange: 3, echo: 77, to: Self.bobPath, at: Self.t0) == [.sendFollowUp(exchange: 3, echo: 77, t3: Self.t0, to: Self.bobPath)])
        #expect(c.onReplyTransmitted(exchange: 0, echo: 77, to: Self.bobPath, at: Self.t0) == [])
    }

    /// Bob's clock reads ours + 5 ms. Bob's request (carrying `bobT1`) reaches us 30 µs later,
    /// our reply leaves 20 µs after that (kernel time) and reaches bob 40 µs later. Returns bob's
    /// t1 and t4 (his clock) and our reply's transmit time.
    static func answerBob(_ c: inout PeerClocks, exchange: UInt32, at arrival: LocalTime) -> (t1: PeerTime, t4: PeerTime, t3: LocalTime) {
        let t1 = PeerTime(ns: arrival.ns - 30_000 + 5_000_000)
        _ = c.onRequest(exchange: exchange, t1: t1, receivedAt: arrival, from: Self.bobPath, peer: Self.bob)
        let t3 = arrival + .microseconds(20)
        _ = c.onReplyTransmitted(exchange: exchange, echo: t1.ns, to: Self.bobPath, at: t3)
        return (t1, PeerTime(ns: t3.ns + 40_000 + 5_000_000), t3)
    }

    @Test("a peer's clock_result makes its exchange a sample of ours: its outbound leg our return one, the offset seen from our side")
    func mirroredSample() throws {
        var c = PeerClocks(me: Self.me)
        c.onPeerReachable(Self.bob, now: Self.t0)
        let (t1, t4, _) = Self.answerBob(&c, exchange: 9, at: Self.t0)
        #expect(c.onResult(from: Self.bob, exchange: 9, echo: t1.ns, t1: t1, t4: t4, now: Self.t0 + .microseconds(100)).isEmpty)
        let e = try #require(c.estimate(of: Self.bob, at: Self.t0 + .microseconds(10)))
        // Legs of 30 and 40 µs: the offset is off by half their difference, as from bob's side.
        #expect(abs(e.offsetNs - 5_005_000) < 1)
        #expect(e.delay == .microseconds(70))
        #expect(c.links[Self.bob]?.mirrored == 1)
    }

    @Test("a clock_result naming no reply of ours, or one already used, or with an impossible round trip, is counted and is no sample")
    func unmatchedResult() {
        var c = PeerClocks(me: Self.me)
        c.onPeerReachable(Self.bob, now: Self.t0)
        let (t1, t4, _) = Self.answerBob(&c, exchange: 9, at: Self.t0)
        _ = c.onResult(from: Self.bob, exchange: 9, echo: t1.ns + 1, t1: t1, t4: t4, now: Self.t0)
        _ = c.onResult(from: Self.bob, exchange: 8, echo: t1.ns, t1: t1, t4: t4, now: Self.t0)
        // Bob says our reply reached him before his request left: no exchange looks like that.
        _ = c.onResult(from: Self.bob, exchange: 9, echo: t1.ns, t1: t1, t4: PeerTime(ns: t1.ns + 10_000), now: Self.t0)
        #expect(c.links[Self.bob]?.unmatchedResults == 3)
        #expect(c.estimate(of: Self.bob, at: Self.t0) == nil)
        _ = c.onResult(from: Self.bob, exchange: 9, echo: t1.ns, t1: t1, t4: t4, now: Self.t0)
        _ = c.onResult(from: Self.bob, exchange: 9, echo: t1.ns, t1: t1, t4: t4, now: Self.t0)
        #expect(c.links[Self.bob]?.mirrored == 1 && c.links[Self.bob]?.unmatchedResults == 4, "a replayed result is used once")
    }

    @Test("an exchange of ours completed by the peer's follow-up sends the peer our half: the request's transmit time and the reply's arrival")
    func sendsResult() {
        var (c, exchange) = Self.measuring()
        // Bob has sent follow-ups before: his replies wait for theirs.
        _ = c.onFollowUp(from: Self.bob, exchange: 999, echo: 0, t3: PeerTime(ns: 0))
        c.onRequestTransmitted(exchange: exchange, t1: Self.t0, to: Self.bobPath, at: Self.t0 + .microseconds(15))
        #expect(c.onReply(
            from: Self.bob, exchange: exchange, echo: Self.t0.ns, t2: PeerTime(ns: Self.t0.ns + 5_050_000), t3: PeerTime(ns: Self.t0.ns + 5_060_000),
            receivedAt: Self.t0 + .microseconds(110), source: Self.bobPath, now: Self.t0 + .microseconds(110)).isEmpty, "held for its follow-up")
        let d = c.onFollowUp(from: Self.bob, exchange: exchange, echo: Self.t0.ns, t3: PeerTime(ns: Self.t0.ns + 5_070_000))
        #expect(d == [.sendResult(exchange: exchange, echo: Self.t0.ns, t1: Self.t0 + .microseconds(15), t4: Self.t0 + .microseconds(110), to: Self.bobPath)])
    }

    @Test("a peer's exchange counts as one of ours for the rate: our next request waits 1.25 intervals from it")
    func resultPostponesRequests() {
        var c = PeerClocks(me: Self.me)
        c.onPeerReachable(Self.bob, now: Self.t0)
        #expect(c.onTick(now: Self.t0, routes: Self.routes).contains { if case .sendRequest = $0 { true } else { false } })
        // During the burst (25 ms) a result at +20 ms moves our next request to +51.25 ms.
        let (t1, t4, _) = Self.answerBob(&c, exchange: 3, at: Self.t0 + .milliseconds(19))
        _ = c.onResult(from: Self.bob, exchange: 3, echo: t1.ns, t1: t1, t4: t4, now: Self.t0 + .milliseconds(20))
        #expect(!c.onTick(now: Self.t0 + .milliseconds(51), routes: Self.routes).contains { if case .sendRequest = $0 { true } else { false } })
        #expect(c.onTick(now: Self.t0 + .microseconds(51_250), routes: Self.routes).contains { if case .sendRequest = $0 { true } else { false } })
    }

    /// A node with one sample of Bob (an estimate), Carol not yet reachable.
    static func bobMeasured() -> PeerClocks {
        var (c, exchange) = measuring()
        _ = c.onReply(
            from: bob, exchange: exchange, echo: t0.ns, t2: PeerTime(ns: t0.ns + 50), t3: PeerTime(ns: t0.ns + 60),
            receivedAt: t0 + .microseconds(110), source: bobPath, now: t0 + .microseconds(110))
        return c
    }

    @Test("direct estimates are gossiped to every reachable peer every 3 seconds, each without the estimate of itself")
    func reports() {
        var c = Self.bobMeasured()
        var routes = Self.routes
        routes[Self.carol] = PeerClocks.Route(endpoint: Self.otherPath, incarnation: 3, vetted: true)
        c.onPeerReachable(Self.carol, now: Self.t0)
        let early = c.onTick(now: Self.t0 + .seconds(2), routes: routes)
        #expect(!early.contains { if case .sendReport = $0 { true } else { false } })
        let d = c.onTick(now: Self.t0 + .seconds(3), routes: routes)
        let reports = d.compactMap { directive -> (ClockReport, PeerID)? in
            if case .sendReport(let r, let to) = directive { return (r, to) }
            return nil
        }
        // (Bob's would be about no one but Bob: not sent.)
        #expect(reports.count == 1)
        #expect(reports.first { $0.1 == Self.carol }?.0.entries.map(\.peer) == [Self.bob])
        #expect(reports.first { $0.1 == Self.carol }?.0.entries.first?.incarnation == 7)
    }

    @Test("a link's first estimate brings its peer our report at the next tick, not at the next 3 s round")
    func reportToNewNeighbour() throws {
        var c = Self.bobMeasured()
        var routes = Self.routes
        routes[Self.carol] = PeerClocks.Route(endpoint: Self.otherPath, incarnation: 3, vetted: true)
        let joined = Self.t0 + .milliseconds(500)
        c.onPeerReachable(Self.carol, now: joined)
        let asked = c.onTick(now: joined, routes: routes).compactMap { d -> UInt32? in
            if case .sendRequest(let e, Self.otherPath, _) = d { return e }
            return nil
        }
        let carolExchange = try #require(asked.first)
        c.onRequestSent(exchange: carolExchange, to: Self.otherPath, t1: joined)
        _ = c.onReply(
            from: Self.carol, exchange: carolExchange, echo: joined.ns, t2: PeerTime(ns: joined.ns + 50), t3: PeerTime(ns: joined.ns + 60),
            receivedAt: joined + .microseconds(110), source: Self.otherPath, now: joined + .microseconds(110))
        #expect(c.nextDeadline(now: joined + .microseconds(120), routes: routes) == joined + .microseconds(120))
        let d = c.onTick(now: joined + .microseconds(120), routes: routes)
        let reports = d.compactMap { directive -> (ClockReport, PeerID)? in
            if case .sendReport(let r, let to) = directive { return (r, to) }
            return nil
        }
        #expect(reports.map(\.1) == [Self.carol])
        #expect(reports.first?.0.entries.map(\.peer) == [Self.bob])
    }

    @Test("a steady, tight link slows to one request a second; after the peer restarts it is measured every 25 ms again")
    func adaptiveRateInTheNode() {
        var (c, exchange) = Self.measuring()
        var t = Self.t0
        var sent: [LocalTime] = []
        /// Bob answers every request at once with a perfect clock until `end`.
        func run(until end: LocalTime) {
            while t < end {
                t = t + .milliseconds(5)
                if let last = sent.last {
                    _ = c.onReply(
                        from: Self.bob, exchange: exchange, echo: last.ns, t2: PeerTime(ns: last.ns + 20_000),
                        t3: PeerTime(ns: last.ns + 30_000), receivedAt: last + .microseconds(50), source: Self.bobPath, now: t)
                }
                for d in c.onTick(now: t, routes: Self.routes) {
                    if case .sendRequest(let e, let to, _) = d, to == Self.bobPath {
                        exchange = e
                        c.onRequestSent(exchange: e, to: Self.bobPath, t1: t)
                        sent.append(t)
                    }
                }
            }
        }
        run(until: Self.t0 + .seconds(20))
        let late = sent.filter { $0 > Self.t0 + .seconds(10) }
        let gaps = zip(late.dropFirst(), late).map { ($0 - $1).ns }
        #expect(!gaps.isEmpty)
        #expect(gaps.allSatisfy { $0 >= 995_000_000 && $0 <= 1_005_000_000 }, "gaps \(gaps)")
        c.onPeerRestarted(Self.bob, now: t)
        let restarted = t
        run(until: restarted + .seconds(1))
        let burst = sent.filter { $0 > restarted }
        #expect(burst.count >= 30, "\(burst.count) requests in the second after the restart")
    }

    @Test("a restarted peer's estimate starts afresh; a forgotten peer is no longer measured")
    func lifecycle() {
        var (c, exchange) = Self.measuring()
        _ = c.onReply(
            from: Self.bob, exchange: exchange, echo: Self.t0.ns, t2: PeerTime(ns: Self.t0.ns + 50), t3: PeerTime(ns: Self.t0.ns + 60),
            receivedAt: Self.t0 + .microseconds(110), source: Self.bobPath, now: Self.t0 + .microseconds(110))
        #expect(c.estimate(of: Self.bob, at: Self.t0) != nil)
        c.onPeerRestarted(Self.bob, now: Self.t0 + .seconds(1))
        #expect(c.estimate(of: Self.bob, at: Self.t0) == nil)
        c.onPeerForgotten(Self.bob)
        #expect(c.links[Self.bob] == nil)
        #expect(!c.onTick(now: Self.t0 + .seconds(2), routes: Self.routes).contains { if case .sendRequest = $0 { true } else { false } })
    }

    @Test("of every pair exactly one end yields when both poll, and each of 64 random devices yields to about half its peers")
    func oneEndOfEachPairYields() {
        var rng = SplitMix64(seed: 7)
        let ids = (0..<64).map { _ in PeerID.random(using: &rng) }
        for a in ids {
            for b in ids where a != b { #expect(PeerClocks.yields(a, to: b) != PeerClocks.yields(b, to: a)) }
            let yielded = ids.count { $0 != a && PeerClocks.yields(a, to: $0) }
            // (Binomial(63, ½): 16–47 holds with probability 1 − 3·10⁻⁵ per device; the seed is fixed.)
            #expect((16...47).contains(yielded), "\(a.short) yields to \(yielded) of 63")
        }
        // By id order alone, the lowest id would yield to none.
        let lowest = ids.min()!
        #expect(ids.contains { $0 != lowest && PeerClocks.yields(lowest, to: $0) })
    }
}
