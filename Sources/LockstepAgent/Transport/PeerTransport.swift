#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LockstepCore
import LockstepPlayerProtocol
import LockstepPeerWire
import Logging
import Synchronization

/// Peer datagrams in and out: seals and opens envelopes, stamps clock-exchange times at the
/// last moment, applies test impairments, and counts (and logs, rate-limited) everything it drops.
///
/// Runs on the agent's thread (``AgentLoop``), before the agent's code: a datagram that fails any
/// check never reaches the agent's core. Times handed in and out are on the agent's *device clock* (``DeviceClock``, the
/// core's ``LocalTime``), which is the host's monotonic clock unless a test simulates another.
/// Send stamps are read from the injected ``HostClock`` (the real monotonic clock in production:
/// a clock exchange measures real time); kernel receive and transmit times are the kernel's.
public final class PeerTransport: Sendable {
    /// An authenticated, decoded datagram.
    public struct Inbound: Sendable {
        public var sender: PeerID
        public var incarnation: UInt64
        /// The low byte of the key epoch it was sealed with.
        public var epochByte: UInt8
        /// For a session-sealed datagram: the session key that opened it.
        public var sessionKey: GroupKey?
        public var message: PeerMessage
        public var source: Endpoint
        /// Kernel receive time on the device clock.
        public var receivedAt: LocalTime
    }

    /// A clock request or reply, as sent, and when the kernel says it left (device clock).
    public struct Transmitted: Sendable {
        public var message: PeerMessage
        public var destination: Endpoint
        public var sentAt: LocalTime
    }

    /// What the transport hands the agent, in the order it happened.
    public enum Event: Sendable {
        case inbound(Inbound)
        case transmitted(Transmitted)
        /// A datagram no key opens, whose header names a member: it may speak another epoch's
        /// key (at most one per member per ``undecryptableInterval``).
        case undecryptable(sender: PeerID, epochByte: UInt8, source: Endpoint)
        /// A pairing datagram (outside the envelope: the joiner holds no key yet), at most
        /// ``pairingPerSecond`` a second.
        case pairing(PairingMessage, source: Endpoint)
    }

    /// Pairing datagrams handed to the agent per second at most (each costs a SPAKE2 exchange).
    public static let pairingPerSecond = 32
    private let pairingBudget = Mutex<(second: Int64, used: Int)>((0, 0))

    /// Members' undecryptable datagrams are reported at most this often each (ns, host time).
    public static let undecryptableInterval: Int64 = 500_000_000
    /// The session key to seal under, per destination (others: the group key).
    private let sessionSeal = Mutex<[Endpoint: GroupKey]>([:])

    /// Seals what goes to these endpoints under these session keys from now on (replacing all).
    public func setSessionSeal(_ map: [Endpoint: GroupKey]) {
        sessionSeal.withLock { $0 = map }
    }

    /// Members, and when each was last reported undecryptable.
    private let members = Mutex<[PeerID: Int64]>([:])
    /// Devices removed from the group: what they send under keys we no longer hold is counted
    /// as theirs (`removed_member`), not as a key problem.
    private let removed = Mutex<Set<PeerID>>([])

    /// The group's members (from the roster): only their undecryptable datagrams are reported.
    public func setMembers(_ ids: some Sequence<PeerID>, removed gone: Set<PeerID>) {
        members.withLock { m in
            var next: [PeerID: Int64] = [:]
            for id in ids { next[id] = m[id] ?? .min }
            m = next
        }
        removed.withLock { $0 = gone }
    }

    public let socket: PeerSocket
    public let sealer: EnvelopeSealer
    public let opener: EnvelopeOpener
    public let clock: DeviceClockSource
    let hostClock: any HostClock
    let impairments: ImpairmentPlan
    let logger: Logger
    private let delayLine: DelayLine?
    private let counters = Mutex<[String: UInt64]>([:])
    private let lastWarning = Mutex<[String: Int64]>([:])
    private let random = Mutex(SystemRandomNumberGenerator())
    /// Clock messages waiting for their kernel transmit time, by timestamp key, with the host
    /// time they were sent (to forget those whose time never comes).
    private let awaitingTransmit = Mutex<(nextKey: UInt32, sent: [UInt32: (message: PeerMessage, destination: Endpoint, at: Int64)])>((0, [:]))
    /// Most messages waiting for a transmit time; older ones are forgotten first.
    static let maxAwaitingTransmit = 256

    public init(
        socket: PeerSocket, sealer: EnvelopeSealer, opener: EnvelopeOpener, clock: DeviceClockSource, hostClock: any HostClock = MonotonicClock(),
        impairments: ImpairmentPlan, logger: Logger
    ) {
        self.socket = socket
        self.sealer = sealer
        self.opener = opener
        self.clock = clock
        self.hostClock = hostClock
        self.impairments = impairments
        self.logger = logger
        self.delayLine = impairments.isNone ? nil : DelayLine(send: { [socket] bytes, to in socket.send(bytes, to: to) })
    }

    /// The wall clock in µs (incarnations are the sender's wall clock at its start).
    static func wallClockMicros() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return UInt64(max(0, ts.tv_sec)) &* 1_000_000 &+ UInt64(max(0, ts.tv_nsec / 1_000))
    }

    /// The device clock now.
    public func now() -> LocalTime { clock.current.device(fromHost: hostClock.now()) }

    /// Reads what the socket has, without blocking (call it when the socket is readable or has an
    /// error queued: ``AgentLoop/watch(_:_:)``), and hands `deliver` each authenticated datagram and
    /// transmit time, in the order they happened. What fails a check is counted and dropped here.
    /// Nothing queues between the socket and the agent: the kernel's receive buffer is the queue,
    /// and what it drops is counted (`dropped_kernel_overflow`).
    func drain(_ deliver: (Event) -> Void) {
        socket.drain(onDatagram: { datagram in
            if let event = event(for: datagram) { deliver(event) }
        }, onTransmitted: { key, sentAt in
            guard let sent = awaitingTransmit.withLock({ $0.sent.removeValue(forKey: key) }) else { return }
            count("transmit_timestamps")
            deliver(.transmitted(Transmitted(message: sent.message, destination: sent.destination, sentAt: clock.current.device(fromHost: sentAt))))
        }, onKernelDrops: { more in
            drop("kernel_overflow", "the kernel dropped datagrams the agent did not read in time (receive buffer full)", count: more)
        })
    }

    /// What `datagram` is for the agent, or nil (dropped and counted).
    private func event(for datagram: PeerSocket.Datagram) -> Event? {
        if PairingMessage.isPairing(datagram.bytes) {
            let second = datagram.receivedAt / 1_000_000_000
            let allowed = pairingBudget.withLock { b -> Bool in
                if b.second != second { b = (second, 0) }
                b.used += 1
                return b.used <= Self.pairingPerSecond
            }
            guard allowed else {
                drop("pairing_rate", "dropped a pairing datagram (more than \(Self.pairingPerSecond) a second)", from: datagram.source)
                return nil
            }
            do throws(DecodeError) {
                return .pairing(try PairingMessage.decode(datagram.bytes), source: datagram.source)
            } catch {
                drop("pairing_malformed", "dropped a malformed pairing datagram", detail: "\(error)", from: datagram.source)
                return nil
            }
        }
        let opened: (header: Envelope.Header, plaintext: [UInt8])
        do throws(Envelope.Rejection) {
            opened = try opener.open(datagram.bytes, hostNow: datagram.receivedAt, wallClockMicros: Self.wallClockMicros())
        } catch {
            // Our own sender id: a path back to ourselves (a static peer naming this agent), or
            // junk forged with our id; counted, not worth a warning.
            let header = error == .unknownKeyEpoch || error == .authenticationFailed ? try? Envelope.header(of: datagram.bytes) : nil
            if error == .fromSelf {
                count("dropped_from_self")
            } else if let h = header, removed.withLock({ $0.contains(h.sender) }) {
                drop("removed_member", "dropped a datagram from a device removed from the group", from: datagram.source)
                return nil
            } else if error == .unknownKeyEpoch, let h = header, h.epochByte == GroupKey.pairEpochByte {
                // A pairwise datagram from a device not yet admitted: counted, not a key problem.
                count("dropped_no_pair_key")
                return nil
            } else if error == .unknownKeyEpoch, let h = header, h.epochByte == GroupKey.sessionEpochByte {
                // A session this agent does not hold (it restarted: what was captured before
                // stays shut): counted, not warned about; a member's is reported below (the
                // offerer offers a new session).
                count("dropped_no_session")
            } else {
                drop(error.counterName, "dropped a datagram", detail: "\(error)", from: datagram.source)
            }
            if let h = header {
                let due = members.withLock { m -> Bool in
                    guard let last = m[h.sender], datagram.receivedAt.subtractingSaturating(last) >= Self.undecryptableInterval else { return false }
                    m[h.sender] = datagram.receivedAt
                    return true
                }
                if due { return .undecryptable(sender: h.sender, epochByte: h.epochByte, source: datagram.source) }
            }
            return nil
        }
        let message: PeerMessage
        do throws(DecodeError) {
            message = try PeerMessage.decode(opened.plaintext)
        } catch {
            if case .outOfRange = error {
                drop("out_of_range", "dropped a message with a number out of range", detail: "\(error)", from: datagram.source)
            } else {
                drop("malformed", "dropped a malformed message", detail: "\(error)", from: datagram.source)
            }
            return nil
        }
        count("received")
        var inbound = Inbound(sender: opened.header.sender, incarnation: opened.header.incarnation, epochByte: opened.header.epochByte, message: message, source: datagram.source, receivedAt: clock.current.device(fromHost: datagram.receivedAt))
        inbound.sessionKey = opened.header.sessionKey
        return .inbound(inbound)
    }

    /// Stops the impairments' delay line (the socket is read by whoever polls it, and closes
    /// when it is released).
    public func stop() {
        delayLine?.stop()
    }

    /// Sends a clock request, stamping its `t1` here, as late as possible before the datagram
    /// leaves; returns the `t1` it carries (nil if it was not sent). See ``send(_:to:sealingWith:)``.
    @discardableResult
    public func sendClockRequest(exchange: UInt32, to endpoint: Endpoint, form: RequestForm = .plain) -> LocalTime? {
        let t1 = now()
        return send(form.message(exchange: exchange, t1: t1), to: endpoint, transmitTime: exchange != 0) ? t1 : nil
    }

    /// Sends a clock reply, stamping its `t3` here, as late as possible before the datagram leaves.
    public func sendClockReply(exchange: UInt32, echo: Int64, t2: LocalTime, to endpoint: Endpoint, form: ReplyForm = .plain) {
        send(form.message(exchange: exchange, echo: echo, t2: t2, t3: now()), to: endpoint, transmitTime: exchange != 0)
    }

    /// Sends a pairing datagram (not sealed: pairing protects itself).
    public func send(_ message: PairingMessage, to endpoint: Endpoint) {
        if socket.send(message.encoded(), to: endpoint) { count("sent") }
    }

    /// Sends `message` to `endpoint`, sealed under `key` (default: the sealer's current key).
    public func send(_ message: PeerMessage, to endpoint: Endpoint, sealingWith key: GroupKey? = nil) {
        send(message, to: endpoint, sealingWith: key, transmitTime: false)
    }

    /// Clock exchanges ask the kernel when they really left (reported later as
    /// ``Event/transmitted(_:)``) unless an impairment delays them: a datagram held back by the
    /// delay line leaves late on purpose, its simulated flight time must count.
    @discardableResult
    private func send(_ message: PeerMessage, to endpoint: Endpoint, sealingWith key: GroupKey? = nil, transmitTime wantsTransmitTime: Bool) -> Bool {
        guard let datagram = sealed(message, to: endpoint, sealingWith: key) else { return false }
        let spec = impairments.spec(for: endpoint)
        let timestampKey = wantsTransmitTime && spec.delayNs == 0 && spec.jitterNs == 0 && socket.transmitTimestamps
            ? awaitTransmit(message, to: endpoint) : nil
        guard let delayLine else {
            if !socket.send(datagram, to: endpoint, timestampKey: timestampKey) {
                count("send_failed")
                return false
            }
            return true
        }
        impaired(datagram, to: endpoint, spec: spec, timestampKey: timestampKey, via: delayLine)
        return true
    }

    /// Sends each message to its endpoint, sealed under the sealer's current key (or the
    /// endpoint's session), in one system call where the socket allows
    /// (``PeerSocket/send(_:)``): what one event asks to send to many peers leaves together.
    public func send(_ batch: [(message: PeerMessage, to: Endpoint)]) {
        var datagrams: [(bytes: [UInt8], to: Endpoint)] = []
        datagrams.reserveCapacity(batch.count)
        for (message, endpoint) in batch {
            guard let datagram = sealed(message, to: endpoint, sealingWith: nil) else { continue }
            if let delayLine {
                impaired(datagram, to: endpoint, spec: impairments.spec(for: endpoint), timestampKey: nil, via: delayLine)
            } else {
                datagrams.append((datagram, endpoint))
            }
        }
        let refused = socket.send(datagrams).count { !$0 }
        if refused > 0 { count("send_failed", UInt64(refused)) }
    }

    /// `message` encoded and sealed for `endpoint` (under `key`, else its session's or the current
    /// key), counted as sent; nil (counted) if it does not fit one datagram.
    private func sealed(_ message: PeerMessage, to endpoint: Endpoint, sealingWith key: GroupKey?) -> [UInt8]? {
        let plaintext = message.encoded()
        guard plaintext.count <= Envelope.maxMessageBytes else {
            count("too_large_to_send")
            logger.error("a message is too large for one datagram; not sent", metadata: ["message.type": "\(MessageType(message))", "message.bytes": "\(plaintext.count)"])
            return nil
        }
        let session = key == nil ? sessionSeal.withLock { $0[endpoint] } : nil
        let datagram = sealer.seal(plaintext, with: key ?? session)
        count("sent")
        if session != nil { count("sent_in_session") }
        return datagram
    }

    /// Remembers a clock message until its transmit time comes; returns its timestamp key.
    private func awaitTransmit(_ message: PeerMessage, to endpoint: Endpoint) -> UInt32 {
        let now = hostClock.now()
        return awaitingTransmit.withLock { state in
            if state.sent.count >= Self.maxAwaitingTransmit {
                // Times that never came (a failed send): forget the oldest half.
                let oldest = state.sent.sorted { $0.value.at < $1.value.at }.prefix(Self.maxAwaitingTransmit / 2)
                for (key, _) in oldest { state.sent[key] = nil }
            }
            let key = state.nextKey
            state.nextKey &+= 1
            state.sent[key] = (message, endpoint, now)
            return key
        }
    }

    private func impaired(_ datagram: [UInt8], to endpoint: Endpoint, spec: ImpairmentPlan.Spec, timestampKey: UInt32?, via line: DelayLine) {
        let (lose, copies, delays): (Bool, Int, [Int64]) = random.withLock { g in
            let lose = spec.loss > 0 && Double.random(in: 0..<1, using: &g) < spec.loss
            let copies = spec.duplicate > 0 && Double.random(in: 0..<1, using: &g) < spec.duplicate ? 2 : 1
            let delays = (0..<copies).map { _ in
                spec.delayNs + (spec.jitterNs > 0 ? Int64.random(in: -spec.jitterNs...spec.jitterNs, using: &g) : 0)
            }
            return (lose, copies, delays)
        }
        if lose {
            count("impaired_lost")
            return
        }
        if copies > 1 { count("impaired_duplicated") }
        let now = hostClock.now()
        for d in delays {
            if d <= 0 {
                socket.send(datagram, to: endpoint, timestampKey: timestampKey)
            } else {
                line.schedule(datagram, to: endpoint, at: now + d)
            }
        }
    }

    // MARK: - Counters

    /// Everything counted so far: sent, received, and each reason for dropping.
    public var snapshot: [String: UInt64] { counters.withLock { $0 } }

    func count(_ key: String, _ n: UInt64 = 1) {
        counters.withLock { $0[key, default: 0] += n }
    }

    /// Counts `count` drops and logs one line per reason at most every 10 s, with the total;
    /// what exactly was wrong goes in the metadata (`drop.detail`).
    func drop(_ key: String, _ message: Logger.Message, detail: String? = nil, from source: Endpoint? = nil, count n: UInt64 = 1) {
        count("dropped_" + key, n)
        let now = hostClock.now()
        let due = lastWarning.withLock { last -> Bool in
            if let t = last[key], now - t < 10 * Nanos.second { return false }
            last[key] = now
            return true
        }
        if due {
            var metadata: Logger.Metadata = ["drop.reason": "\(key)", "dropped.total": "\(snapshot["dropped_" + key] ?? 0)"]
            if let detail { metadata["drop.detail"] = "\(detail)" }
            if let source { metadata["peer.source"] = "\(source)" }
            logger.warning(message, metadata: metadata)
        }
    }
}
