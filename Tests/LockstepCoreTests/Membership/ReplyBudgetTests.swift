import Testing

@testable import LockstepCore

/// Anti-amplification (review finding M3): what an agent sends to an address that has not shown it
/// is a peer's stays within 3× what came from it, a few datagrams a second, with bounded tables.
@Suite("Reply budget and path validation")
struct ReplyBudgetTests {
    static let t0 = LocalTime(ns: 1_000_000_000_000)
    static let victim = Endpoint.v4(a: 192, b: 0, c: 2, d: 7, port: 9)
    static let me = PeerID(high: 1, low: 1)
    static let member = PeerID(high: 2, low: 2)

    @Test("an address gets at most 3× the bytes received from it")
    func threeTimes() {
        var b = ReplyBudget()
        b.onReceived(bytes: 100, from: Self.victim, now: Self.t0)
        #expect(b.spend(bytes: 250, to: Self.victim, now: Self.t0) == nil)
        #expect(b.spend(bytes: 60, to: Self.victim, now: Self.t0) == .amplification)
        #expect(b.spend(bytes: 50, to: Self.victim, now: Self.t0) == nil)
        #expect(b.accounts[Self.victim]?.sent == 300)
    }

    @Test("an address never heard from gets nothing")
    func unheard() {
        var b = ReplyBudget()
        #expect(b.spend(bytes: 1, to: Self.victim, now: Self.t0) == .amplification)
    }

    @Test("replies to one address are rate-limited, however much it sends")
    func rate() {
        var b = ReplyBudget()
        b.onReceived(bytes: 1_000_000, from: Self.victim, now: Self.t0)
        let allowed = (0..<1000).filter { _ in b.spend(bytes: 10, to: Self.victim, now: Self.t0) == nil }.count
        #expect(allowed == Int(b.configuration.datagramsPerSecond))
        #expect(b.spend(bytes: 10, to: Self.victim, now: Self.t0) == .rate)
        #expect(b.spend(bytes: 10, to: Self.victim, now: Self.t0 + .milliseconds(100)) == nil)
    }

    @Test("random source addresses do not grow the budget's table past its bound")
    func boundedSources() {
        var b = ReplyBudget()
        for i in 0..<5000 {
            b.onReceived(bytes: 50, from: .v4(a: 10, b: UInt8(i >> 8 & 0xff), c: UInt8(i & 0xff), d: 1, port: 9), now: Self.t0 + .milliseconds(Int64(i)))
        }
        #expect(b.accounts.count == b.configuration.maxSources)
    }

    @Test("an address is validated by a reply echoing a t1 sent to it, not one sent elsewhere")
    func echoValidates() {
        var v = PathValidation()
        let other = Endpoint.v4(a: 10, b: 0, c: 0, d: 3, port: 4000)
        v.onChallengeSent(to: other, t1: Self.t0)
        let elsewhere = v.onEcho(Self.t0.ns, from: Self.victim, now: Self.t0)
        #expect(!elsewhere)
        #expect(!v.isValidated(Self.victim, now: Self.t0))
        let answered = v.onEcho(Self.t0.ns, from: other, now: Self.t0)
        #expect(answered)
        #expect(v.isValidated(other, now: Self.t0 + .seconds(1)))
        #expect(!v.isValidated(other, now: Self.t0 + v.configuration.validFor))
    }

    @Test("an address is challenged again once half its validation has run, unless discovery vouches for it; the look runs every twentieth of a lifetime, and at once after the clock stepped back")
    func revalidation() {
        var v = PathValidation()
        let validFor = v.configuration.validFor
        let learned = Endpoint.v4(a: 10, b: 0, c: 0, d: 3, port: 4000), vouched = Endpoint.v4(a: 10, b: 0, c: 0, d: 4, port: 4000)
        let never = Endpoint.v4(a: 10, b: 0, c: 0, d: 5, port: 4000)
        for e in [learned, vouched] {
            v.onChallengeSent(to: e, t1: Self.t0)
            v.onEcho(Self.t0.ns, from: e, now: Self.t0)
        }
        let all = [learned, vouched, never]
        func due(_ at: LocalTime) -> [Endpoint] { v.dueRevalidations(of: all, isVouched: { $0 == vouched }, now: at) }
        let fresh = Self.t0 + validFor / 2 - .seconds(1)
        #expect(due(fresh) == [never], "fresh: only the address that never answered")
        #expect(due(fresh + .seconds(2)).isEmpty, "the next look waits a twentieth of a lifetime")
        let stale = fresh + validFor / 20
        #expect(due(stale) == [learned, never], "half a lifetime old: challenged again; the vouched one never")
        #expect(due(stale + .seconds(1)).isEmpty)
        #expect(due(stale - .seconds(10)) == [learned, never], "the local clock stepped back: looks at once")
        v.onChallengeSent(to: learned, t1: stale)
        v.onEcho(stale.ns, from: learned, now: stale)
        #expect(due(stale + validFor / 20) == [never], "answered: fresh again")
    }

    @Test("challenges and validated addresses stay bounded")
    func boundedValidation() {
        var v = PathValidation()
        for i in 0..<3000 {
            let e = Endpoint.v4(a: 10, b: UInt8(i >> 8 & 0xff), c: UInt8(i & 0xff), d: 1, port: 9)
            let t = Self.t0 + .milliseconds(Int64(i))
            v.onChallengeSent(to: e, t1: t)
            v.onChallengeSent(to: e, t1: t + .microseconds(1))
            if i % 2 == 0 { v.onEcho(t.ns, from: e, now: t) }
        }
        #expect(v.challenges.count <= v.configuration.maxChallenged)
        #expect(v.validated.count == v.configuration.maxValidated)
    }

    @Test("a node counts a path as validated when DNS-SD gave it or a probe reply echoed its t1")
    func nodeValidation() {
        var node = Node(identity: .init(peer: Self.me, incarnation: 1, name: "me"))
        let mdns = Endpoint.v4(a: 10, b: 0, c: 0, d: 2, port: 4000)
        _ = node.onSighting(Self.member, name: "m", sighting: .init(instance: "m", interfaceIndex: 2), endpoints: [mdns], now: Self.t0)
        #expect(node.isValidated(mdns, now: Self.t0))
        // A member's datagram from a spoofed address: not validated.
        _ = node.onMessage(.hello(name: "m", wantsReply: true), from: Self.member, incarnation: 5, source: Self.victim, receivedAt: Self.t0, now: Self.t0)
        #expect(!node.isValidated(Self.victim, now: Self.t0))
        // A reply echoing a guessed t1: still not.
        _ = node.onMessage(.clockReply(exchange: 0, echo: Self.t0.ns, t2: PeerTime(ns: 0), t3: PeerTime(ns: 0)), from: Self.member, incarnation: 5, source: Self.victim, receivedAt: Self.t0, now: Self.t0)
        #expect(!node.isValidated(Self.victim, now: Self.t0))
        // A probe to it, answered with its t1.
        node.onClockRequestSent(exchange: 0, to: Self.victim, t1: Self.t0 + .milliseconds(3))
        _ = node.onMessage(.clockReply(exchange: 0, echo: (Self.t0 + .milliseconds(3)).ns, t2: PeerTime(ns: 0), t3: PeerTime(ns: 0)), from: Self.member, incarnation: 5, source: Self.victim, receivedAt: Self.t0 + .milliseconds(4), now: Self.t0 + .milliseconds(4))
        #expect(node.isValidated(Self.victim, now: Self.t0 + .milliseconds(4)))
    }

    @Test("datagrams under random sender ids leave every per-sender table of a node bounded")
    func randomSenders() {
        var node = Node(identity: .init(peer: Self.me, incarnation: 1, name: "me"))
        var now = Self.t0
        for i in 0..<2000 {
            let sender = PeerID(high: UInt64(i + 10), low: UInt64(i * 7 + 3))
            let source = Endpoint.v4(a: 10, b: 1, c: UInt8(i >> 8 & 0xff), d: UInt8(i & 0xff), port: 9)
            _ = node.onMessage(.hello(name: "x\(i)", wantsReply: true), from: sender, incarnation: 1, source: source, receivedAt: now, now: now)
            _ = node.onMessage(.participant(ParticipantRecord(peer: sender, incarnation: 1, version: 1, players: [])), from: sender, incarnation: 1, source: source, receivedAt: now, now: now)
            _ = node.onTick(now: now)
            now += .milliseconds(5)
        }
        let bound = node.configuration.membership.maxPeers
        #expect(node.membership.peers.count <= bound)
        #expect(node.clocks.links.count <= bound)
        #expect(node.group.participants.count <= bound + 1)
        #expect(node.paths.challenges.count <= node.paths.configuration.maxChallenged)
    }
}
