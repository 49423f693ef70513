import LockstepSimKit
import Testing

@testable import LockstepCore

/// What wakes an idle node: its clock exchanges go out in batches, and a deadline that went away
/// (a follow-up that came before its wait ran out) wakes nothing. An idle agent's CPU is mostly
/// its wake-ups (docs/scale.md).
@Suite("Idle wake-ups", .tags(.simulation))
struct IdleWakeUpTests {
    let s = Nanos.second

    /// A settled idle group of `hosts` with kernel transmit times (follow-ups and results, as on Linux).
    func idleGroup(_ hosts: Int, joinShare: Double, seed: UInt64 = 3) -> GroupSimulation {
        var network = GroupSimulation.Network()
        network.transmitTimestamps = true
        var sim = GroupSimulation(hosts: hosts, seed: seed, network: network) { $0.clocks.exchanges.joinShare = joinShare }
        sim.run(for: 20 * s)
        return sim
    }

    /// Per host, the distinct instants at which it sent clock requests (not probes) after `from`,
    /// and how many requests it sent.
    func requestInstants(_ sim: GroupSimulation, from: Int64) -> [(instants: Int, requests: Int)] {
        sim.hosts.map { host in
            var instants = Set<Int64>(), requests = 0
            for entry in host.log where entry.time >= from {
                guard case .sendClockRequest(let exchange, _, _) = entry.directive, exchange != 0 else { continue }
                instants.insert(entry.time)
                requests += 1
            }
            return (instants.count, requests)
        }
    }

    @Test("once steady, a node sends its clock requests in batches: at most 0.6 of the instants of sending each when due, for at most a quarter more requests")
    func requestsGoInBatches() {
        let window: Int64 = 20
        var sim = idleGroup(6, joinShare: ExchangeScheduler.Configuration().joinShare)
        let from = sim.now
        sim.run(for: window * s)
        let batched = requestInstants(sim, from: from)
        // The same group sending each request when it is due wakes for each peer apart.
        var apart = idleGroup(6, joinShare: 0)
        apart.run(for: window * s)
        let unbatched = requestInstants(apart, from: from)
        let instants = (batched: batched.reduce(0) { $0 + $1.instants }, apart: unbatched.reduce(0) { $0 + $1.instants })
        let requests = (batched: batched.reduce(0) { $0 + $1.requests }, apart: unbatched.reduce(0) { $0 + $1.requests })
        #expect(Double(instants.batched) <= 0.6 * Double(instants.apart), "request instants over \(window) s, batched \(batched), apart \(unbatched)")
        // A request that joins early shortens its interval: the price of the batch.
        #expect(Double(requests.batched) <= 1.25 * Double(requests.apart), "requests over \(window) s, batched \(batched), apart \(unbatched)")
    }

    @Test("an idle node's timer wakes it about twice a second: for its batch of requests, reports and anti-entropy, not for waits that ended early")
    func fewTimerWakeUps() {
        let window: Int64 = 20
        var sim = idleGroup(6, joinShare: ExchangeScheduler.Configuration().joinShare)
        let before = sim.hosts.map(\.ticks)
        sim.run(for: window * s)
        let perSecond = zip(sim.hosts, before).map { Double($0.0.ticks - $0.1) / Double(window) }
        #expect(perSecond.allSatisfy { $0 <= 3.5 }, "timer wake-ups per second: \(perSecond)")
    }

    @Test("a follow-up that arrives ends its wait: the node's next deadline moves later, so a shell that moves its timer later is not woken for it")
    func followUpEndsItsWait() {
        var c = PeerClocks(me: PeerClocksTests.me)
        let t0 = PeerClocksTests.t0, routes = PeerClocksTests.routes, bob = PeerClocksTests.bob, path = PeerClocksTests.bobPath
        c.onPeerReachable(bob, now: t0)
        guard case .sendRequest(let exchange, _, _)? = c.onTick(now: t0, routes: routes).first else {
            Issue.record("no request to bob")
            return
        }
        c.onRequestSent(exchange: exchange, to: path, t1: t0)
        c.onRequestTransmitted(exchange: exchange, t1: t0, to: path, at: t0)
        let replied = t0 + .microseconds(110)
        _ = c.onReply(
            from: bob, exchange: exchange, echo: t0.ns, t2: PeerTime(ns: t0.ns + 5_050_000), t3: PeerTime(ns: t0.ns + 5_060_000),
            receivedAt: replied, source: path, now: replied)
        let waiting = c.nextDeadline(now: replied, routes: routes)
        #expect(waiting <= replied + TransmitStamps.Configuration().followUpWait)
        let followed = replied + .microseconds(20)
        _ = c.onFollowUp(from: bob, exchange: exchange, echo: t0.ns, t3: PeerTime(ns: t0.ns + 5_060_010))
        #expect(c.nextDeadline(now: followed, routes: routes) > waiting)
    }
}
