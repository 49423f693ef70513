import Testing

@testable import LockstepCore

/// Clock exchanges in interleaved form (peer protocol §4.2c): a reply's transmit time rides the
/// next reply, the requester's half of an exchange the next request; no network.
@Suite("Interleaved exchanges")
struct InterleavedExchangeTests {
    typealias T = PeerClocksTests
    let us = TimeSpan.microseconds(1)
    static let us = TimeSpan.microseconds(1)

    /// Bob's clock reads ours + 5 ms: his reply to a request sent at `sent` (our clock) stamped
    /// 50 and 60 µs later by his clock's reckoning, and arriving 110 µs after `sent`.
    static func bob(_ t: LocalTime) -> PeerTime { PeerTime(ns: t.ns + 5_000_000) }

    /// Clocks measuring bob whose first (plain) exchange is answered and followed up by bob:
    /// bob has transmit times. Returns the clocks and the time reached.
    static func afterFirstExchange() -> (PeerClocks, LocalTime) {
        var (c, exchange) = T.measuring()
        let arrival = T.t0 + 110 * us
        _ = c.onReply(
            from: T.bob, exchange: exchange, echo: T.t0.ns, t2: bob(T.t0 + 50 * us), t3: bob(T.t0 + 60 * us), receivedAt: arrival, source: T.bobPath, now: arrival)
        _ = c.onFollowUp(from: T.bob, exchange: exchange, echo: T.t0.ns, t3: bob(T.t0 + 61 * us))
        return (c, arrival)
    }

    /// The request `c` sends at `t`, told as sent (and, with `transmitted`, as left 15 µs later).
    static func request(_ c: inout PeerClocks, at t: LocalTime, transmitted: Bool = true) -> (exchange: UInt32, form: RequestForm)? {
        for d in c.onTick(now: t, routes: T.routes) {
            guard case .sendRequest(let exchange, T.bobPath, let form) = d else { continue }
            c.onRequestSent(exchange: exchange, to: T.bobPath, t1: t)
            if transmitted { c.onRequestTransmitted(exchange: exchange, t1: t, to: T.bobPath, at: t + 15 * us) }
            return (exchange, form)
        }
        return nil
    }

    @Test("once the peer has sent a follow-up, requests go in interleaved form; the next reply's transmit time completes the sample before it, and our half of each exchange goes with the next request, never alone")
    func requesterSide() throws {
        var (c, t) = Self.afterFirstExchange()
        t = T.t0 + .milliseconds(25)
        let second = try #require(Self.request(&c, at: t))
        #expect(second.form == .interleaved(nil), "nothing owed yet")
        let arrival2 = t + 110 * us
        let d2 = c.onReply(
            from: T.bob, exchange: second.exchange, echo: t.ns, t2: Self.bob(t + 50 * us), t3: Self.bob(t + 60 * us), receivedAt: arrival2, source: T.bobPath,
            now: arrival2, form: .interleaved(nil))
        #expect(d2.isEmpty)
        let stampedBefore = c.links[T.bob]?.kernelStamped
        // Held for its transmit time: our half is owed, with the request's kernel transmit time.
        let t3 = t + .milliseconds(25)
        let third = try #require(Self.request(&c, at: t3))
        #expect(third.form == .interleaved(ExchangeResult(exchange: second.exchange, echo: t.ns, t1: PeerTime(ours: t + 15 * us), t4: PeerTime(ours: arrival2))))
        // Bob's reply to the third carries when his second reply left: that sample is complete.
        let arrival3 = t3 + 110 * us
        let d3 = c.onReply(
            from: T.bob, exchange: third.exchange, echo: t3.ns, t2: Self.bob(t3 + 50 * us), t3: Self.bob(t3 + 60 * us), receivedAt: arrival3,
            source: T.bobPath, now: arrival3, form: .interleaved(ClockFollowUp(exchange: second.exchange, echo: t.ns, t3: Self.bob(t + 62 * us))))
        #expect(!d3.contains { if case .sendResult = $0 { true } else { false } }, "no clock_result alone")
        #expect(c.links[T.bob]?.kernelStamped == (stampedBefore ?? 0) + 1, "both send times the kernel's")
        #expect(c.links[T.bob]?.lastKernelStamped == true)
        // The third's transmit time rides the reply to our fourth request: with no reply to it
        // within a follow-up's wait, the third is used with its own t3, and counted as late.
        let t4 = t3 + .milliseconds(25)
        _ = try #require(Self.request(&c, at: t4))
        _ = c.onTick(now: t4 + .milliseconds(49), routes: T.routes)
        #expect(c.links[T.bob]?.stamps.followUpsMissed == 0)
        _ = c.onTick(now: t4 + .milliseconds(50), routes: T.routes)
        #expect(c.links[T.bob]?.stamps.followUpsMissed == 1)
    }

    @Test("a peer that never answers in interleaved form (an agent from before it) gets plain requests after three tries, until it sends one itself")
    func olderPeer() throws {
        var (c, t) = Self.afterFirstExchange()
        var forms: [RequestForm] = []
        for i in 1...5 {
            t = T.t0 + .milliseconds(25 * Int64(i))
            forms.append(try #require(Self.request(&c, at: t)).form)
        }
        #expect(forms == [.interleaved(nil), .interleaved(nil), .interleaved(nil), .plain, .plain])
        // It sends an interleaved request: it speaks the form.
        _ = c.onRequest(exchange: 40, t1: Self.bob(t), receivedAt: t + 30 * us, from: T.bobPath, peer: T.bob, interleaved: true)
        #expect(try #require(Self.request(&c, at: t + .milliseconds(25))).form == .interleaved(nil))
    }

    @Test("a peer without transmit times (no follow-up ever) gets plain requests: the form would save nothing")
    func noTransmitTimes() throws {
        var (c, exchange) = T.measuring()
        let arrival = T.t0 + 110 * us
        _ = c.onReply(
            from: T.bob, exchange: exchange, echo: T.t0.ns, t2: Self.bob(T.t0 + 50 * us), t3: Self.bob(T.t0 + 60 * us), receivedAt: arrival, source: T.bobPath,
            now: arrival)
        #expect(try #require(Self.request(&c, at: T.t0 + .milliseconds(25))).form == .plain)
    }

    @Test("a measured peer's interleaved request is answered in that form: no follow-up once the reply has left, its transmit time goes with the next reply, and the result it carries is a sample of ours")
    func replierSide() {
        var c = PeerClocks(me: T.me)
        c.onPeerReachable(T.bob, now: T.t0)
        let t1 = Self.bob(T.t0 - 30 * us)
        #expect(c.onRequest(exchange: 5, t1: t1, receivedAt: T.t0, from: T.bobPath, peer: T.bob, interleaved: true)
            == [.sendReply(exchange: 5, echo: t1.ns, t2: T.t0, to: T.bobPath, form: .interleaved(nil))])
        let left = T.t0 + 20 * us
        #expect(c.onReplyTransmitted(exchange: 5, echo: t1.ns, to: T.bobPath, at: left).isEmpty, "no clock_follow_up alone")
        // Bob's next request, 25 ms later, with his half of exchange 5: our reply reached him 40 µs after it left.
        let next = T.t0 + .milliseconds(25)
        let t1b = Self.bob(next - 30 * us)
        let result = ExchangeResult(exchange: 5, echo: t1.ns, t1: t1, t4: PeerTime(ns: left.ns + 40_000 + 5_000_000))
        _ = c.onResult(from: T.bob, exchange: result.exchange, echo: result.echo, t1: result.t1, t4: result.t4, now: next)
        #expect(c.links[T.bob]?.mirrored == 1)
        #expect(c.estimate(of: T.bob, at: next).map { abs($0.offsetNs - 5_005_000) < 1 } == true, "legs of 30 and 40 µs, seen from our side")
        #expect(c.onRequest(exchange: 6, t1: t1b, receivedAt: next, from: T.bobPath, peer: T.bob, interleaved: true)
            == [.sendReply(exchange: 6, echo: t1b.ns, t2: next, to: T.bobPath, form: .interleaved(ClockFollowUp(exchange: 5, echo: t1.ns, t3: PeerTime(ours: left))))])
        // Each transmit time goes once.
        #expect(c.onRequest(exchange: 7, t1: t1b, receivedAt: next + .milliseconds(1), from: T.bobPath, peer: T.bob, interleaved: true)
            == [.sendReply(exchange: 7, echo: t1b.ns, t2: next + .milliseconds(1), to: T.bobPath, form: .interleaved(nil))])
    }

    @Test("an interleaved request from a peer this node does not measure is answered in that form and followed up as a plain reply is")
    func unmeasuredRequester() {
        var c = PeerClocks(me: T.me)
        let t1 = PeerTime(ns: 123)
        #expect(c.onRequest(exchange: 5, t1: t1, receivedAt: T.t0, from: T.otherPath, peer: T.carol, interleaved: true)
            == [.sendReply(exchange: 5, echo: 123, t2: T.t0, to: T.otherPath, form: .interleaved(nil))])
        #expect(c.onReplyTransmitted(exchange: 5, echo: 123, to: T.otherPath, at: T.t0 + 20 * us) == [.sendFollowUp(exchange: 5, echo: 123, t3: T.t0 + 20 * us, to: T.otherPath)])
    }
}
