import Testing

@testable import LockstepCore

/// ``PeerClocks`` measures only the peers its grid names, and follows the grid as devices come.
@Suite("Peer clocks in a grid")
struct PeerClocksGridTests {
    static func id(_ n: UInt64) -> PeerID { PeerID(high: 0, low: n) }
    static func path(_ n: UInt64) -> Endpoint { .v4(a: 10, b: 0, c: 0, d: UInt8(n), port: 4000) }
    static func routes(_ peers: [UInt64]) -> [PeerID: PeerClocks.Route] {
        Dictionary(uniqueKeysWithValues: peers.map { (id($0), PeerClocks.Route(endpoint: path($0), incarnation: 1, vetted: true)) })
    }
    static let t0 = LocalTime(ns: 10_000_000_000)

    /// Node 3 in a grid from 3 devices up (so that 4 devices make one 2 wide).
    static func node() -> PeerClocks {
        var configuration = PeerClocks.Configuration()
        configuration.neighbours = ClockNeighbours(denseUpTo: 2)
        return PeerClocks(me: id(3), configuration: configuration)
    }

    static func requested(_ directives: [PeerClocks.Directive]) -> Set<Endpoint> {
        Set(directives.compactMap { if case .sendRequest(_, let to, _) = $0 { to } else { nil } })
    }

    @Test("with devices 1–4 node 3 measures 4 (its row) and 1 (its column), asks and reports only to them")
    func rowAndColumn() {
        var c = Self.node()
        for n: UInt64 in [1, 2, 4] { c.onPeerReachable(Self.id(n), now: Self.t0) }
        #expect(c.measured == [Self.id(1), Self.id(4)])
        #expect(Set(c.links.keys) == [Self.id(1), Self.id(4)])
        let d = c.onTick(now: Self.t0, routes: Self.routes([1, 2, 4]))
        #expect(Self.requested(d) == [Self.path(1), Self.path(4)])
    }

    @Test("a fifth device moves the grid: the link to 4 ends, one to 2 starts with the next tick")
    func gridMoves() {
        var c = Self.node()
        for n: UInt64 in [1, 2, 4] { c.onPeerReachable(Self.id(n), now: Self.t0) }
        _ = c.onTick(now: Self.t0, routes: Self.routes([1, 2, 4]))
        c.onPeerReachable(Self.id(5), now: Self.t0 + .seconds(1))
        // Devices 1–5 are 3 wide: node 3 is at row 0, column 2, with 1 and 2.
        #expect(c.measured == [Self.id(1), Self.id(2)])
        #expect(c.links[Self.id(4)] == nil)
        #expect(c.mesh.directEstimates[Self.id(4)] == nil)
        let d = c.onTick(now: Self.t0 + .seconds(1), routes: Self.routes([1, 2, 4, 5]))
        #expect(Self.requested(d).contains(Self.path(2)))
        #expect(!Self.requested(d).contains(Self.path(4)))
        #expect(c.links[Self.id(2)] != nil)
        // 5 forgotten: back to the first grid.
        c.onPeerForgotten(Self.id(5))
        #expect(c.measured == [Self.id(1), Self.id(4)])
        #expect(c.links[Self.id(2)] == nil)
    }

    @Test("a peer that is not measured still gets its requests answered")
    func answersEveryone() {
        var c = Self.node()
        for n: UInt64 in [1, 2, 4] { c.onPeerReachable(Self.id(n), now: Self.t0) }
        let d = c.onRequest(exchange: 9, t1: PeerTime(ns: 77), receivedAt: Self.t0, from: Self.path(2), peer: Self.id(2))
        #expect(d == [.sendReply(exchange: 9, echo: 77, t2: Self.t0, to: Self.path(2))])
    }
}
