/// The clock protocol of one node, whole: four-timestamp exchanges with every reachable peer,
/// their kernel transmit times, one estimator per peer, and the mesh of gossiped estimates that
/// cross-checks them (`Protocol/peer-protocol.md` §3, §4.1–4.2a, §4.11).
///
/// A pure instance, as ``Membership``: every input is an `on…` call with the current local time,
/// every output a ``Directive`` for its owner (``Node``) to carry out. It knows peers by id; where
/// they are (their preferred path), whether discovery vouches for them and which incarnation they
/// run are told by the owner in ``Route``s, because ``Membership`` owns that.
///
/// An exchange:
/// 1. ``onTick(now:routes:)`` decides a request is due (``ExchangeScheduler``): ``Directive/sendRequest(exchange:to:)``;
/// 2. the shell stamps `t1` as late as it can, sends, and says which `t1` it stamped
///    (``onRequestSent(exchange:to:t1:)``), and later, where the kernel reports it, when the
///    datagram really left (``onRequestTransmitted(exchange:t1:to:at:)``);
/// 3. the peer answers; ``onReply(from:exchange:echo:t2:t3:receivedAt:source:now:)`` matches the
///    reply by exchange id *and* its echoed `t1` (RFC 5905's origin check: a replayed or forged
///    reply is refused, and the echoed value is never used as a time), waits for the peer's
///    follow-up if it sends them (``TransmitStamps``), and gives the sample to the estimator.
///
/// Where the peer sends follow-ups, exchanges go in interleaved form once it answers in it
/// (§4.2c, ``Interleave``): the follow-up rides the next reply and our `clock_result` the next
/// request, two datagrams an exchange rather than four.
public struct PeerClocks: Sendable {
    public struct Configuration: Sendable {
        public var estimator = ClockEstimator.Configuration()
        public var exchanges = ExchangeScheduler.Configuration()
        public var transmitStamps = TransmitStamps.Configuration()
        public var mesh = MeshClock.Configuration()
        /// Which peers are measured directly: all of a small group, a row and a column of a large one.
        public var neighbours = ClockNeighbours()
        /// How often direct clock estimates are gossiped to the peers, for closure checks: three
        /// times within the mesh's report lifetime (a report carries its bound's growth, so an
        /// older one is only wider, never dishonest).
        public var reportInterval: TimeSpan = .seconds(3)
        public var ownStep = OwnClockStepDetector.Configuration()

        public init() {}
    }

    /// What the owner knows of a reachable peer.
    public struct Route: Sendable, Equatable {
        /// Its preferred path.
        public var endpoint: Endpoint
        /// Its incarnation, if known.
        public var incarnation: UInt64?
        /// Discovery vouches for it (DNS-SD showed it, or it was configured): its reports count
        /// in the mesh (see ``MeshClock``).
        public var vetted: Bool

        public init(endpoint: Endpoint, incarnation: UInt64?, vetted: Bool) {
            self.endpoint = endpoint
            self.incarnation = incarnation
            self.vetted = vetted
        }
    }

    /// The clock exchanges with one peer.
    public struct Link: Sendable {
        public var estimator: ClockEstimator
        public var scheduler: ExchangeScheduler
        /// Kernel transmit times of this peer's exchanges: our requests', and its replies' (follow-ups).
        public var stamps: TransmitStamps
        var nextExchange: UInt32 = 0
        /// Where the outstanding exchanges went (a reply from another path is not a sample of this one).
        var sentTo: Endpoint?
        /// Requests sent.
        public var exchangesSent: UInt64 = 0
        /// Exchanges that got no reply in time.
        public var lost: UInt64 = 0
        /// Samples the estimator did not use.
        public var rejected: UInt64 = 0
        /// Samples rejected as outliers (far outside the bound: a step not yet confirmed, or noise).
        public var outliers: UInt64 = 0
        /// Steps of the peer's clock the estimator confirmed (each restarts its window).
        public var steps: UInt64 = 0
        /// Replies refused because they echoed a `t1` this node never sent for that exchange.
        public var wrongEchoes: UInt64 = 0
        /// Samples whose send times were both the kernel's (t1 and, from a follow-up, t3).
        public var kernelStamped: UInt64 = 0
        /// Whether the last sample used had both send times from the kernel.
        public var lastKernelStamped = false
        /// Replies this node sent to the peer's requests, awaiting the peer's `clock_result`:
        /// the exchange, its `t1` as echoed, when the request arrived and when the reply left
        /// (the kernel's time; nil until it says). The last ``answeredCapacity``.
        var answered: [(exchange: UInt32, echo: Int64, t2: LocalTime, t3: LocalTime?, interleaved: Bool)] = []
        /// Whether this node's requests to the peer go in interleaved form.
        var interleave = Interleave.untried
        /// Our half of the last exchange the peer answered in interleaved form, for our next
        /// request (the peer has its own half: the exchange is a sample of its own too).
        var owedResult: ExchangeResult?
        /// When our last reply in interleaved form to the peer really left, for our reply to
        /// its next request.
        var owedFollowUp: ClockFollowUp?
        /// Samples measured by the peer's exchanges (its `clock_result`s), not ours.
        public var mirrored: UInt64 = 0
        /// `clock_result`s that named no reply of ours still awaiting one (late, duplicated,
        /// replayed or forged), or whose times could not come from a real exchange.
        public var unmatchedResults: UInt64 = 0
        /// The estimator as it was before its last confirmed step, and when: restored if the
        /// step turns out to have been our own clock's (``OwnClockStepDetector``).
        var beforeStep: (estimator: ClockEstimator, at: LocalTime)?

        /// A link that starts at `now`; `yields` on one end of each pair (``PeerClocks/yields(_:to:)``).
        init(now: LocalTime, configuration: Configuration, yields: Bool) {
            estimator = ClockEstimator(configuration: configuration.estimator)
            scheduler = ExchangeScheduler(configuration: configuration.exchanges, appeared: now, yieldsToPeer: yields)
            stamps = TransmitStamps(configuration: configuration.transmitStamps)
        }

        /// How the request about to go out is sent (``Interleave``), taking the result it carries.
        mutating func nextRequestForm() -> RequestForm {
            switch interleave {
            case .untried, .off:
                return .plain
            case .trying(let sent) where sent >= PeerClocks.interleavedTries:
                interleave = .off
                return .plain
            case .trying(let sent):
                interleave = .trying(sent: sent + 1)
            case .on:
                break
            }
            defer { owedResult = nil }
            return .interleaved(owedResult)
        }

        /// When this link next has work: an exchange due or expiring, or a transmit time awaited.
        func nextWakeup(at now: LocalTime) -> LocalTime {
            let exchange = scheduler.nextWakeup(at: now, estimate: estimator.estimate(at: now))
            return stamps.nextDeadline.map { min(exchange, $0) } ?? exchange
        }

        /// ``nextWakeup(at:)`` for a link reached in place (`links.values[i]`, through the
        /// dictionary's modify accessor): read through its getter, the link was copied, its
        /// estimator's windows retained field by field. Changes nothing.
        mutating func nextWakeupInPlace(at now: LocalTime) -> LocalTime {
            nextWakeup(at: now)
        }
    }

    /// Replies remembered per peer for its results: a result follows its exchange within a round
    /// trip or a follow-up wait, or with the peer's next request, so a few suffice.
    static let answeredCapacity = 4

    /// Whether a link's requests go in interleaved form (§4.2c of the peer protocol, NTP's
    /// interleaved mode): two datagrams an exchange rather than four. Not before the peer has
    /// shown it sends transmit times (a follow-up: without them the form saves nothing); then
    /// tried, kept once the peer answers in that form or sends it, and given up after
    /// ``interleavedTries`` requests with no such answer (an agent that predates the form drops
    /// it as malformed) until the peer sends one.
    enum Interleave: Sendable, Equatable {
        case untried
        case trying(sent: Int)
        case on
        case off
    }

    /// Requests in interleaved form sent before a peer that never answers in that form is
    /// taken for one that does not speak it.
    static let interleavedTries = 3

    /// What to do.
    public enum Directive: Sendable, Equatable {
        /// Send a clock request for `exchange`, in `form`; the shell stamps `t1` and reports it
        /// (``onRequestSent(exchange:to:t1:)``).
        case sendRequest(exchange: UInt32, to: Endpoint, form: RequestForm = .plain)
        /// Answer a request: `echo` is its `t1`, `t2` when it arrived; the shell stamps `t3`.
        case sendReply(exchange: UInt32, echo: Int64, t2: LocalTime, to: Endpoint, form: ReplyForm = .plain)
        /// The kernel's transmit time of a reply this node sent, for the requester.
        case sendFollowUp(exchange: UInt32, echo: Int64, t3: LocalTime, to: Endpoint)
        /// Tell the replier of `exchange` (whose request carried `echo`) when the request really
        /// left (`t1`) and its reply arrived (`t4`): its `clock_result`.
        case sendResult(exchange: UInt32, echo: Int64, t1: LocalTime, t4: LocalTime, to: Endpoint)
        /// Gossip this node's direct estimates to `peer`.
        case sendReport(ClockReport, to: PeerID)
        /// A reply was refused: it echoed a `t1` this node did not send for its exchange
        /// (replayed, redirected or forged). Counted by the shell.
        case refusedReply(from: PeerID)
        /// This node's own clock jumped by `by` (most peers seemed to jump by `−by` at once, see
        /// ``OwnClockStepDetector``): the shell steps its device clock back by `by` and then calls
        /// ``onLocalClockCorrected(now:)``.
        case ownClockStepped(by: TimeSpan)
    }

    public let me: PeerID
    public let configuration: Configuration
    public private(set) var links: [PeerID: Link] = [:]
    public private(set) var mesh: MeshClock
    /// Every peer heard from and not forgotten (reachable or lost): the devices the grid of
    /// ``ClockNeighbours`` is laid over.
    public private(set) var known: Set<PeerID> = []
    /// The peers this node measures itself (``ClockNeighbours``); the others are reached through
    /// their reports (two-hop paths in ``mesh``).
    public private(set) var measured: Set<PeerID> = []
    private var nextReport: LocalTime?
    /// Peers whose link just got its first estimate: they get this node's report at the next tick
    /// rather than at the next round, so that a new neighbour has our paths at once (after the
    /// grid moved, the peers it no longer measures are reached only through them).
    private var reportSoon: Set<PeerID> = []
    private var ownStep: OwnClockStepDetector
    /// Directives found while handling a sample, given out by the next call that returns some.
    private var pending: [Directive] = []

    public init(me: PeerID, configuration: Configuration = .init()) {
        self.me = me
        self.configuration = configuration
        var mesh = configuration.mesh
        // The closures' noise is read from the estimators' bounds: the same width.
        mesh.boundSigmas = configuration.estimator.boundSigmas
        self.mesh = MeshClock(localID: me, configuration: mesh)
        self.ownStep = OwnClockStepDetector(configuration: configuration.ownStep)
    }

    // MARK: - Peers

    /// `peer` became reachable: exchanges start (with a burst) if it is one this node measures,
    /// unless they already run.
    public mutating func onPeerReachable(_ peer: PeerID, now: LocalTime) {
        guard peer != me else { return }
        if known.insert(peer).inserted { updateMeasured() }
        if measured.contains(peer), links[peer] == nil { links[peer] = newLink(peer, now: now) }
    }

    /// A fresh link to `peer`.
    private func newLink(_ peer: PeerID, now: LocalTime) -> Link {
        Link(now: now, configuration: configuration, yields: Self.yields(me, to: peer))
    }

    /// Whether `me` yields to `peer` when both poll (``ExchangeScheduler/yieldsToPeer``): exactly
    /// one end of each pair does, and each node to about half its peers: the lower id of a pair
    /// whose ids differ in an odd number of bits, else the higher. (By id order alone, the lowest
    /// id would poll for all its peers and the highest answer everyone's requests.)
    static func yields(_ me: PeerID, to peer: PeerID) -> Bool {
        let odd = ((me.high ^ peer.high).nonzeroBitCount + (me.low ^ peer.low).nonzeroBitCount) % 2 == 1
        return (me > peer) != odd
    }

    /// `peer` restarted: a new incarnation may run on a new clock epoch, so its estimate starts afresh.
    public mutating func onPeerRestarted(_ peer: PeerID, now: LocalTime) {
        mesh.removePeer(peer)
        links[peer] = measured.contains(peer) ? newLink(peer, now: now) : nil
    }

    /// `peer` is forgotten.
    public mutating func onPeerForgotten(_ peer: PeerID) {
        links[peer] = nil
        mesh.removePeer(peer)
        if known.remove(peer) != nil { updateMeasured() }
    }

    /// The grid moved (a device came or went for good): links to peers no longer measured end,
    /// and their direct estimates leave the mesh, which reaches them through paths from now on
    /// (reports about them are kept). Links to newly measured peers start on the next tick.
    private mutating func updateMeasured() {
        measured = configuration.neighbours.measured(by: me, among: known)
        for peer in links.keys where !measured.contains(peer) {
            links[peer] = nil
            mesh.removeDirect(peer)
        }
    }

    /// The local clock stepped (a test hook simulates this; a monotonic clock never does): every
    /// estimate was on the old scale, so all start afresh with a burst, and reports are due now.
    public mutating func onLocalClockStep(now: LocalTime) {
        for peer in links.keys {
            links[peer] = newLink(peer, now: now)
            mesh.removePeer(peer)
        }
        ownStep.reset()
        pending.removeAll()
        nextReport = now
    }

    /// The shell stepped the local clock back after an ``Directive/ownClockStepped(by:)``: the
    /// estimates hold again (they were made before the step), but exchanges in flight and the
    /// schedule were on the stepped scale, so exchanges start over with a burst.
    public mutating func onLocalClockCorrected(now: LocalTime) {
        for peer in links.keys {
            links[peer]?.scheduler = ExchangeScheduler(configuration: configuration.exchanges, appeared: now, yieldsToPeer: Self.yields(me, to: peer))
            links[peer]?.stamps = TransmitStamps(configuration: configuration.transmitStamps)
            // Replies stamped on the clock before the correction: a peer's result for one would
            // be a sample straddling the step (it would look like the step undone).
            links[peer]?.answered.removeAll()
            links[peer]?.owedResult = nil
            links[peer]?.owedFollowUp = nil
            links[peer]?.sentTo = nil
            links[peer]?.beforeStep = nil
        }
        ownStep.reset()
        pending.removeAll()
        nextReport = now
    }

    // MARK: - Exchanges

    /// A clock request from `source`: answer it. (A probe, exchange 0, is answered too: the
    /// requester learns we are alive.) A request from a measured `peer` is remembered, so that
    /// its `clock_result` makes the exchange a sample of ours too.
    ///
    /// A request is also half a sample: sent at `t1` on the peer's clock, it arrived at
    /// `receivedAt` on ours. When that is off our estimate of the peer by more than any
    /// asymmetry explains (its hard bound) and a clock step's worth besides
    /// (``OwnClockStepDetector/Configuration/minStep``), every link looks again soon: if our own
    /// clock jumped, the peer's estimator sees it too, and confirms it as a step of the peer's
    /// within a few probes, so we must notice first (from our own exchanges, each a full sample)
    /// even when it was the peer's exchange that met the step. (A slow datagram looks like our
    /// clock jumping ahead: at worst a few probes more.)
    ///
    /// A request in interleaved form (`interleaved`) is answered in that form, with the transmit
    /// time of our previous reply in that form to the peer; its result, if it carried one, goes
    /// to ``onResult(from:exchange:echo:t1:t4:now:)`` first.
    public mutating func onRequest(
        exchange: UInt32, t1: PeerTime, receivedAt: LocalTime, from source: Endpoint, peer: PeerID? = nil, interleaved: Bool = false
    ) -> [Directive] {
        // (A peer this node does not measure gets no transmit time in the next reply, which
        // needs a link to remember it: it gets a follow-up, as for a plain reply.)
        var form: ReplyForm = interleaved ? .interleaved(nil) : .plain
        if exchange != 0, let peer, var link = links[peer] {
            if link.answered.count == Self.answeredCapacity { link.answered.removeFirst() }
            link.answered.append((exchange, t1.ns, receivedAt, nil, interleaved))
            if interleaved {
                // It speaks the form: our requests go in it too.
                link.interleave = .on
                form = .interleaved(link.owedFollowUp)
                link.owedFollowUp = nil
            }
            links[peer] = link
            if let estimate = link.estimator.estimate(at: receivedAt) {
                let oneWay = Double(receivedAt.ns.subtractingSaturating(estimate.localTime(at: t1).ns))
                let explained = estimate.hardBound(at: receivedAt) + Double(configuration.ownStep.minStep.ns)
                if (oneWay - Double(estimate.delay.ns) / 2).magnitude > explained {
                    for other in links.keys { links[other]?.scheduler.lookSoon(by: receivedAt) }
                }
            }
        }
        return [.sendReply(exchange: exchange, echo: t1.ns, t2: receivedAt, to: source, form: form)]
    }

    /// The shell sent request `exchange` to `destination` carrying `t1`.
    public mutating func onRequestSent(exchange: UInt32, to destination: Endpoint, t1: LocalTime) {
        guard exchange != 0, let peer = peer(sentTo: destination) else { return }
        links[peer]?.scheduler.onStamped(exchangeID: UInt64(exchange), t1: t1)
    }

    /// The kernel says request `exchange` (carrying `t1`) left for `destination` at `sentAt`.
    public mutating func onRequestTransmitted(exchange: UInt32, t1: LocalTime, to destination: Endpoint, at sentAt: LocalTime) {
        guard exchange != 0, let peer = peer(sentTo: destination) else { return }
        links[peer]?.stamps.onRequestTransmitted(exchange: exchange, t1: t1, at: sentAt)
    }

    /// The kernel says our reply to `exchange` (echoing `echo`) left for `destination` at `sentAt`:
    /// the requester gets that time in a follow-up, or, for a reply in interleaved form, in our
    /// reply to its next request.
    public mutating func onReplyTransmitted(exchange: UInt32, echo: Int64, to destination: Endpoint, at sentAt: LocalTime) -> [Directive] {
        guard exchange != 0 else { return [] }
        // Found first, then changed: changing `links` while iterating it copied the whole
        // dictionary (every link's estimator) on each reply.
        var found: (peer: PeerID, index: Int)?
        for (peer, link) in links {
            guard let i = link.answered.firstIndex(where: { $0.exchange == exchange && $0.echo == echo && $0.t3 == nil }),
                sentAt >= link.answered[i].t2
            else { continue }
            found = (peer, i)
            break
        }
        if let found {
            links[found.peer]?.answered[found.index].t3 = sentAt
            if links[found.peer]?.answered[found.index].interleaved == true {
                links[found.peer]?.owedFollowUp = ClockFollowUp(exchange: exchange, echo: echo, t3: PeerTime(ours: sentAt))
                return []
            }
        }
        return [.sendFollowUp(exchange: exchange, echo: echo, t3: sentAt, to: destination)]
    }

    /// `peer`'s half of an exchange it ran with this node: its request (carrying `echo`) left at
    /// `t1`, our reply arrived at `t4`. With our receive and transmit times that is a sample of
    /// ours, mirrored: the peer's outbound leg is our return one. It counts as one of our
    /// exchanges for the rate, so a pair needs only one end to measure both.
    public mutating func onResult(from peer: PeerID, exchange: UInt32, echo: Int64, t1: PeerTime, t4: PeerTime, now: LocalTime) -> [Directive] {
        guard var link = links[peer] else { return [] }
        guard let i = link.answered.firstIndex(where: { $0.exchange == exchange && $0.echo == echo && $0.t3 != nil }),
            let sample = Self.mirrored(t1: t1, t2: link.answered[i].t2, t3: link.answered[i].t3!, t4: t4)
        else {
            link.unmatchedResults += 1
            links[peer] = link
            return []
        }
        link.answered.remove(at: i)
        link.mirrored += 1
        link.scheduler.onPeerExchange(at: now)
        links[peer] = link
        ingest(TransmitStamps.Ready(sample: sample, kernelT1: true, kernelT3: true), from: peer, mirrored: true)
        return takePending()
    }

    /// The sample of ours that a peer's exchange is: the peer's request left at `t1` (its clock)
    /// and arrived at `t2` (ours), our reply left at `t3` and arrived at `t4`. Our outbound leg is
    /// `t4 − t3`, our return leg `t2 − t1`, the midpoint ours `(t2 + t3) / 2`; it is written as an
    /// exchange of ours with no turnaround, which has exactly those. Nil when the times cannot
    /// come from a real exchange (our reply before the request, a negative round trip).
    static func mirrored(t1: PeerTime, t2: LocalTime, t3: LocalTime, t4: PeerTime) -> ClockSample? {
        let turnaround = t3.ns.subtractingReportingOverflow(t2.ns)
        let roundTrip = t4.ns.subtractingReportingOverflow(t1.ns)
        guard !turnaround.overflow, !roundTrip.overflow, turnaround.partialValue >= 0 else { return nil }
        let delay = roundTrip.partialValue.subtractingReportingOverflow(turnaround.partialValue)
        guard !delay.overflow, delay.partialValue >= 0 else { return nil }
        let midpoint = t2.ns &+ turnaround.partialValue / 2
        let start = midpoint &- delay.partialValue / 2
        let arrival = start &+ (t4.ns &- t3.ns)
        let sample = ClockSample(t1: LocalTime(ns: start), t2: PeerTime(ns: arrival), t3: PeerTime(ns: arrival), t4: LocalTime(ns: start &+ delay.partialValue))
        return sample.isValid ? sample : nil
    }

    /// A reply from `peer` (authenticated, arrived from `source` at `receivedAt`, kernel time).
    ///
    /// A reply in interleaved form (`form`) may carry when the peer's previous reply in that
    /// form left: that completes the previous sample first. This one is
    /// held for the next reply's (or used with its own `t3` when none comes within two of the
    /// link's intervals), and our half of it goes with our next request.
    public mutating func onReply(
        from peer: PeerID, exchange: UInt32, echo: Int64, t2: PeerTime, t3: PeerTime, receivedAt: LocalTime, source: Endpoint, now: LocalTime,
        form: ReplyForm = .plain
    ) -> [Directive] {
        guard exchange != 0, links[peer] != nil else { return [] }
        if case .interleaved(let followUp?) = form, let ready = links[peer]?.stamps.onFollowUp(exchange: followUp.exchange, t1: followUp.echo, t3: followUp.t3) {
            ingest(ready, from: peer)
        }
        guard var link = links[peer] else { return takePending() }
        let t1: LocalTime
        switch link.scheduler.onReply(exchangeID: UInt64(exchange), echoedT1: echo) {
        case .matched(let sent): t1 = sent
        case .unknown: return takePending()
        case .wrongEcho:
            link.wrongEchoes += 1
            links[peer] = link
            return takePending() + [.refusedReply(from: peer)]
        }
        // A reply from another path than the one asked is not a sample of this path.
        guard link.sentTo == nil || link.sentTo == source else {
            links[peer] = link
            return takePending()
        }
        let sample = ClockSample(t1: t1, t2: t2, t3: t3, t4: receivedAt)
        let ready: TransmitStamps.Ready?
        if case .interleaved = form {
            // (Only an answer to our own request says the peer speaks the form.)
            link.interleave = .on
            var stamped = link.stamps.stamped(exchange: exchange, sample: sample)
            stamped.interleaved = true
            // (A peer that has never sent a transmit time would find no reply to match it with.)
            if link.stamps.peerSendsFollowUps {
                link.owedResult = ExchangeResult(exchange: exchange, echo: echo, t1: PeerTime(ours: stamped.sample.t1), t4: PeerTime(ours: receivedAt))
            }
            // Until our next request's reply brings its transmit time: that request is due within
            // 1.5 intervals (the peer's own exchanges may hold ours back, ``ExchangeScheduler``),
            // later if the interval doubles meanwhile, and at least a steady interval away (a
            // burst may end before it). Once it has gone, the wait is a follow-up's from then.
            let interval = max(link.scheduler.interval(at: now, estimate: link.estimator.estimate(at: now)), configuration.exchanges.minInterval)
            ready = link.stamps.hold(stamped, now: now, wait: interval * Int64(3) + configuration.transmitStamps.followUpWait)
        } else {
            ready = link.stamps.onReply(exchange: exchange, sample: sample, now: now)
        }
        links[peer] = link
        if let ready { ingest(ready, from: peer) }
        return takePending()
    }

    /// A follow-up from `peer`: its reply to `exchange` really left at `t3`. The peer has
    /// transmit times: our requests try the interleaved form.
    public mutating func onFollowUp(from peer: PeerID, exchange: UInt32, echo: Int64, t3: PeerTime) -> [Directive] {
        guard var link = links[peer] else { return [] }
        let ready = link.stamps.onFollowUp(exchange: exchange, t1: echo, t3: t3)
        if link.interleave == .untried { link.interleave = .trying(sent: 0) }
        links[peer] = link
        guard let ready else { return [] }
        ingest(ready, from: peer)
        return takePending()
    }

    private mutating func takePending() -> [Directive] {
        defer { pending.removeAll() }
        return pending
    }

    /// `reporter` gossips its direct estimates. Reports about this node, about earlier lives of
    /// their targets, and from reporters discovery does not vouch for are not kept.
    ///
    /// Returns the entries kept: each says its target, in that incarnation, answers the reporter
    /// (a reporter reports only peers it can reach), which is how ``Membership`` knows the peers
    /// this node does not measure are alive (``Membership/onVouched(_:incarnation:now:)``).
    @discardableResult
    public mutating func onReport(
        _ report: ClockReport, from reporter: PeerID, route: Route?, incarnation: (PeerID) -> UInt64?, now: LocalTime
    ) -> [(peer: PeerID, incarnation: UInt64)] {
        guard let route else { return [] }
        let info = MeshClock.Reporter(vetted: route.vetted, host: route.endpoint.host)
        var kept: [(peer: PeerID, incarnation: UInt64)] = []
        for entry in report.entries where entry.peer != me {
            // A report about an earlier life of its target measured another clock epoch.
            if let known = incarnation(entry.peer), entry.incarnation < known { continue }
            if mesh.updateReport(from: reporter, info, target: entry.peer, estimate: entry.estimate, receivedAt: now) == .stored {
                kept.append((entry.peer, entry.incarnation))
            }
        }
        return kept
    }

    /// A complete sample (its follow-up in, or not coming) goes to the estimator. The peer gets
    /// our half of an exchange of ours (its `clock_result`) when it sends follow-ups: then it has
    /// kernel transmit times, and the exchange is a sample of its own too.
    private mutating func ingest(_ ready: TransmitStamps.Ready, from peer: PeerID, mirrored: Bool = false) {
        guard var link = links[peer] else { return }
        let sample = ready.sample
        // (In interleaved form our half went, or goes, with the next request.)
        if !mirrored, !ready.interleaved, ready.kernelT3, let to = link.sentTo {
            pending.append(.sendResult(exchange: ready.exchange, echo: ready.wireT1, t1: sample.t1, t4: sample.t4, to: to))
        }
        let before = link.estimator
        // Had our clock jumped by Δ, the estimate was read Δ too far along its slope s too: the
        // residual is −Δ(1 + s). Through peers of different skews only −Δ agrees.
        let slope = (before.estimate(at: sample.t4)?.skewPPM ?? 0) * 1e-6
        // A mirrored sample is the peer's exchange: had our clock jumped, the peer's exchanges
        // show it to both ends at once, and counting them towards a step of the peer's clock
        // would let the link confirm one before this node can tell the step was its own
        // (``OwnClockStepDetector``). Our own probes, sent soon after an outlier, confirm it.
        let verdict = link.estimator.onSample(sample, confirmStep: !mirrored)
        if before.estimate(at: sample.t4) == nil, link.estimator.estimate(at: sample.t4) != nil { reportSoon.insert(peer) }
        // (The scheduler restarts its burst itself on a step.)
        link.scheduler.onVerdict(verdict, at: sample.t4)
        link.scheduler.onSlowRun(link.estimator.slowRunLength)
        var evidence: Double?
        switch verdict {
        case .clockStepped(let by):
            link.steps += 1
            mesh.removePeer(peer)
            // Perhaps it was our clock that stepped: what the link knew is kept a while.
            link.beforeStep = (before, sample.t4)
            evidence = by / (1 + slope)
        case .accepted:
            link.lastKernelStamped = ready.kernelT1 && ready.kernelT3
            if link.lastKernelStamped { link.kernelStamped += 1 }
            // (Right after a step the link agrees with the new clock: that proves nothing.)
            if link.beforeStep.map({ sample.t4 - $0.at > configuration.ownStep.window }) ?? true {
                link.beforeStep = nil
                ownStep.onConsistent(from: peer)
            }
        case .rejectedOutlier(let residual):
            link.outliers += 1
            link.rejected += 1
            evidence = residual / (1 + slope)
        case .rejectedDelay, .rejectedInvalid:
            link.rejected += 1
        }
        if let estimate = link.estimator.estimate(at: sample.t4) { mesh.updateLocal(peer: peer, estimate: estimate) }
        links[peer] = link
        if let evidence { onEvidence(evidence, delay: sample.delay, from: peer, at: sample.t4) }
    }

    /// A sample of `peer` fell outside its estimate by `residualNs` (skew-corrected). If our own
    /// clock stepped, every peer shows it: the others are looked at now, before this link's own
    /// confirmations (25 ms apart) take the step for the peer's. Once most agree, the step is
    /// ours: links that took it for their peer's get back what they knew.
    private mutating func onEvidence(_ residualNs: Double, delay: Int64, from peer: PeerID, at t: LocalTime) {
        let measured = links.values.count { $0.estimator.estimate(at: t) != nil }
        guard let step = ownStep.onOutlier(from: peer, residualNs: residualNs, delay: TimeSpan(ns: delay), at: t, measured: measured) else {
            for other in links.keys where other != peer { links[other]?.scheduler.lookSoon(by: t) }
            return
        }
        pending.append(.ownClockStepped(by: step))
        for (p, link) in links {
            guard let b = link.beforeStep, t - b.at <= configuration.ownStep.window else { continue }
            links[p]?.estimator = b.estimator
            links[p]?.beforeStep = nil
            links[p]?.steps -= 1
            if let e = b.estimator.estimate(at: t) { mesh.updateLocal(peer: p, estimate: e) }
        }
    }

    // MARK: - Time

    /// Time passes: lost exchanges, late follow-ups, requests due, reports due. `routes` are the
    /// reachable peers.
    public mutating func onTick(now: LocalTime, routes: [PeerID: Route]) -> [Directive] {
        var out: [Directive] = []
        let peers = routes.keys.sorted().filter { measured.contains($0) }
        for peer in peers {
            // (Newly measured after the grid moved: its exchanges start now, with a burst.)
            var link = links[peer] ?? newLink(peer, now: now)
            link.lost += UInt64(link.scheduler.expire(at: now).count)
            let late = link.stamps.expire(now: now)
            links[peer] = link
            for ready in late { ingest(ready, from: peer) }
        }
        // A request due to one peer takes along those that may join it (``ExchangeScheduler/Configuration/joinShare``):
        // one wake-up for the batch, and the replies come in together.
        var sending: [(peer: PeerID, join: Bool)] = []
        for peer in peers {
            guard let link = links[peer] else { continue }
            let window = link.scheduler.sendWindow(at: now, estimate: link.estimator.estimate(at: now))
            if now >= window.due {
                sending.append((peer, false))
            } else if now >= window.earliest {
                sending.append((peer, true))
            }
        }
        let anyDue = sending.contains { !$0.join }
        for (peer, join) in sending where anyDue || !join {
            guard var link = links[peer], let route = routes[peer] else { continue }
            link.nextExchange = link.nextExchange == .max ? 1 : link.nextExchange + 1
            link.scheduler.onSent(exchangeID: UInt64(link.nextExchange), at: now)
            link.exchangesSent &+= 1
            // A new path: samples from the old one must not mix with this one's.
            link.sentTo = route.endpoint
            let form = link.nextRequestForm()
            if case .interleaved = form {
                link.stamps.onInterleavedRequestSent(now: now)
            }
            out.append(.sendRequest(exchange: link.nextExchange, to: route.endpoint, form: form))
            links[peer] = link
        }
        if nextReport.map({ now >= $0 }) ?? true {
            nextReport = now + configuration.reportInterval
            mesh.expire(at: now)
            out += reports(routes: routes, to: measured)
        } else if !reportSoon.isEmpty {
            out += reports(routes: routes, to: reportSoon)
        }
        reportSoon.removeAll()
        // Late follow-ups may have shown a step of our own clock.
        return takePending() + out
    }

    /// This node's direct estimates, to the reachable peers of `recipients` (only peers it
    /// measures can convert them: a report is on its reporter's clock), in datagram-sized pieces.
    private func reports(routes: [PeerID: Route], to recipients: Set<PeerID>) -> [Directive] {
        let entries: [ClockReport.Entry] = mesh.directEstimates.compactMap { peer, estimate in
            guard let incarnation = routes[peer]?.incarnation else { return nil }
            return ClockReport.Entry(peer: peer, incarnation: incarnation, estimate: ReportedEstimate(reporting: estimate))
        }.sorted { $0.peer < $1.peer }
        guard !entries.isEmpty else { return [] }
        var out: [Directive] = []
        for chunk in entries.parts(of: PeerMessage.maxReportEntries) {
            for peer in routes.keys.sorted() where recipients.contains(peer) && measured.contains(peer) {
                let about = chunk.filter { $0.peer != peer }
                // (A report about no one but its recipient tells it nothing.)
                if !about.isEmpty { out.append(.sendReport(ClockReport(entries: about), to: peer)) }
            }
        }
        return out
    }

    /// When ``onTick(now:routes:)`` next has work for the peers in `routes`.
    public func nextDeadline(now: LocalTime, routes: [PeerID: Route]) -> LocalTime {
        nextDeadline(now: now, isReachable: { routes[$0] != nil })
    }

    /// ``nextDeadline(now:routes:)`` for the peers `isReachable` holds: the agent asks after
    /// every event, and building every route for it was a measurable share of an idle agent's CPU.
    public func nextDeadline(now: LocalTime, isReachable: (PeerID) -> Bool) -> LocalTime {
        var next = reportSoon.isEmpty ? nextReport ?? now : now
        for (peer, link) in links where isReachable(peer) { next = min(next, link.nextWakeup(at: now)) }
        return max(next, now)
    }

    /// ``nextDeadline(now:isReachable:)``, each link read in place: what the node's timer asks
    /// after every event. Iterating the links copied each one; at 64 peers that was 8 % of the
    /// core's CPU in `scale-sim` (docs/scale.md, twenty-sixth step). Changes nothing.
    public mutating func nextWakeup(now: LocalTime, isReachable: (PeerID) -> Bool) -> LocalTime {
        var next = reportSoon.isEmpty ? nextReport ?? now : now
        // A hand-kept index: `links.indices` would hold a copy of the dictionary, and the first
        // in-place access would then copy its storage.
        var i = links.startIndex
        while i != links.endIndex {
            if isReachable(links.keys[i]) { next = min(next, links.values[i].nextWakeupInPlace(at: now)) }
            links.formIndex(after: &i)
        }
        return max(next, now)
    }

    // MARK: - Queries

    /// The current direct estimate of `peer`'s clock (peer minus local), if usable.
    public func estimate(of peer: PeerID, at now: LocalTime) -> ClockEstimate? {
        links[peer]?.estimator.estimate(at: now)
    }

    /// The estimate of `peer`'s clock to convert times with: the direct one, checked against the
    /// mesh, or a two-hop path when the direct link is distrusted or missing.
    public func resolved(_ peer: PeerID, at now: LocalTime) -> MeshClock.ResolvedOffset? {
        mesh.resolved(peer: peer, at: now)
    }

    /// ``resolved(_:at:)`` for converting instants: the same offset and rate, its bound not widened
    /// by the mesh's asymmetry scale (``MeshClock/checked(peer:at:)``). A conversion reads no
    /// bound, and the scale reads every closure of the mesh; a playing player's reports (ten a
    /// second) and every operation convert a timeline (docs/scale.md, twenty-sixth step).
    public func conversion(of peer: PeerID, at now: LocalTime) -> ClockEstimate? {
        mesh.checked(peer: peer, at: now)?.estimate
    }

    /// The best round trip to `peer`, if measured.
    public func roundTrip(to peer: PeerID, at now: LocalTime) -> TimeSpan? {
        links[peer]?.estimator.estimate(at: now)?.delay
    }

    private func peer(sentTo destination: Endpoint) -> PeerID? {
        links.first { $0.value.sentTo == destination }?.key
    }
}
