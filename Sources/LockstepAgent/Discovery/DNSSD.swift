#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CLockstepPosix
import LockstepCore
import LockstepPlayerProtocol
import Logging
import Synchronization

// DNS-SD (mDNS service discovery) for Lockstep, over the dns_sd C API of avahi's Bonjour
// compatibility library (module CDNSSD).
//
// Files: DNSSD.swift (this: the public API), DNSSDEventLoop.swift (the thread that owns every
// DNSServiceRef), DNSSDServiceRef.swift (one owning class per DNSServiceRef), DNSSDTracker.swift
// (the pure bookkeeping: browse -> resolve -> addresses -> events), DNSSDTXTRecord.swift,
// DNSSDError.swift.

/// A Lockstep service instance seen on one interface, resolved to addresses.
public struct DiscoveredService: Sendable, Hashable {
    /// The DNS-SD instance name as published. avahi may have renamed it (`name #2`) on a
    /// collision, so it identifies the instance on the network, not the peer: the peer id in
    /// ``txt`` does that.
    public var instanceName: String
    /// The interface it was seen on (kernel ifindex; `lo` is 1).
    public var interfaceIndex: UInt32
    /// The SRV target, e.g. `vm-2.local.`. Never an identity: avahi renames hosts that share a
    /// name (`vm`, `vm-2`, ...), and the name can change while the service runs.
    public var hostTarget: String
    /// The decoded TXT record (see ``TXTRecord``; keys lowercased).
    public var txt: [String: String]
    /// Every A and AAAA address currently known for ``hostTarget`` on ``interfaceIndex``, with
    /// the SRV port: IPv4 first, then IPv6, link-local last. IPv6 link-local addresses carry
    /// `scope` = ``interfaceIndex``. Never empty.
    public var endpoints: [Endpoint]

    public init(instanceName: String, interfaceIndex: UInt32, hostTarget: String, txt: [String: String], endpoints: [Endpoint]) {
        self.instanceName = instanceName
        self.interfaceIndex = interfaceIndex
        self.hostTarget = hostTarget
        self.txt = txt
        self.endpoints = endpoints
    }
}

/// What ``DNSSDDiscovery`` reports.
public enum DiscoveryEvent: Sendable, Hashable {
    /// avahi cannot be reached (no D-Bus system bus, no avahi-daemon, or it went away). Once per
    /// outage; retries follow quietly. The reason is one line, for logs and status output.
    case daemonUnavailable(reason: String)
    /// Connected to avahi (first time or again): our service is being published and browsing
    /// has started.
    case daemonAvailable
    /// Our service is published under this name (avahi may have renamed it). Repeated only when
    /// the name changes, or after a reconnect.
    case registered(instanceName: String)
    /// An instance was resolved, or its TXT record or address set changed.
    case serviceUpdated(DiscoveredService)
    /// An instance reported by ``serviceUpdated(_:)`` was withdrawn (mDNS goodbye or expiry) on
    /// that interface.
    case serviceRemoved(instanceName: String, interfaceIndex: UInt32)
}

/// Publishes our Lockstep service and browses for the others, through avahi.
///
/// Everything touching the dns_sd library happens on one dedicated thread (the compat
/// library is not thread-safe), which sleeps in `poll()` on the sockets of all its
/// `DNSServiceRef`s plus a wake-up pipe; the methods here only queue commands for it. Events
/// arrive on the stream returned by ``start(instanceName:port:txt:)``, in order; the stream
/// buffers without limit and finishes after ``stop()``.
///
/// How an instance is followed: `DNSServiceBrowse` (all interfaces) reports it per interface;
/// `DNSServiceResolve` on that interface gives the SRV target, port and TXT record; then
/// `DNSServiceQueryRecord` for A and AAAA of the target on that interface gives the addresses
/// (avahi's compat layer has no `DNSServiceGetAddrInfo`). Resolves and queries keep running,
/// so TXT and address changes are reported, until the instance's peer is reachable
/// (``settle(_:)``): then they are closed, and opened again when the browse reports the
/// instance again, when it is withdrawn and comes back, or when its peer is lost or restarts
/// (``refresh(_:)``). At most `maxTrackedServices` instances are resolved at once, and fewer
/// while avahi is slow to open lookups; the others wait for a free slot (see ``DNSSDTracker``,
/// which also states the bound on open refs).
///
/// Our own service is reported too, like any other, typically twice: on `lo` (127.0.0.1,
/// ::1) and on each LAN interface. It is deliberately not filtered here: the caller knows its
/// own peer id and filters by the TXT record, and also merges one peer seen on several
/// interfaces.
///
/// Daemon absence and restarts: if no daemon can be reached, ``DiscoveryEvent/daemonUnavailable(reason:)``
/// is emitted once with a one-line reason such as
/// `avahi-daemon is not running (DNSServiceRegister: kDNSServiceErr_Unknown)` or
/// `no D-Bus system bus (/run/dbus/system_bus_socket missing) (DNSServiceRegister: kDNSServiceErr_Unknown)`,
/// and connecting is retried as a `poll()` timeout: first after `retryInterval` (2 s), then
/// after twice the last wait each time, up to 30 s, and at once when avahi's pid file names a
/// daemon not seen before (the loop looks every `retryInterval`); never while the system bus's
/// socket file is missing (``DNSSDRetry``). When the
/// daemon dies or restarts under us (a callback reports the client failed, or
/// `DNSServiceProcessResult` fails), every ref is deallocated, `daemonUnavailable` is emitted,
/// and the same retry follows; on success ``DiscoveryEvent/daemonAvailable`` is emitted, the
/// service is published again and browsing restarts, so instances still present are reported
/// again through `serviceUpdated`.
///
/// An outage does **not** emit `serviceRemoved` for what was reported before: a dead local
/// daemon says nothing about the peers, whose liveness the agent tracks over UDP. Only an mDNS
/// goodbye or expiry seen by a working daemon removes an instance. Consequently a peer that
/// vanished during an outage is never reported removed; the agent's own liveness timeout
/// handles it.
public final class DNSSDDiscovery: Sendable {
    public let serviceType: String
    private let logger: Logger
    private let maxTrackedServices: Int
    private let initialTrackedServices: Int
    /// How long opening a `DNSServiceRef` may take before avahi counts as busy (a ref opens in
    /// 10–60 ms on an idle lab host, and 0.3–10 s while 32 hosts' daemons are saturated).
    public static let slowRef: Duration = .milliseconds(100)
    private let retryInterval: Duration
    private let control = Mutex(Control.idle)

    private enum Control {
        case idle
        case running(DNSSDMailbox, pthread_t)
        case stopped
    }

    /// - Parameters:
    ///   - serviceType: the DNS-SD service type, `_name._udp`.
    ///   - maxTrackedServices: the most (instance, interface) pairs resolved at once. Each
    ///     costs three `DNSServiceRef`s at most, and in avahi's compat layer each ref is a
    ///     thread and a D-Bus connection (the system bus allows 256 per user by default).
    ///   - initialTrackedServices: how many are resolved at once at first, and at least.
    ///     Opening a ref is a blocking round trip to avahi-daemon on this thread, so the loop
    ///     times each: one opened within ``slowRef`` adds a slot (up to `maxTrackedServices`),
    ///     a slower one halves them. With many devices starting together the daemons saturate,
    ///     and each ref opened early delays the answers of the others (docs/scale.md,
    ///     eighteenth step); an idle daemon answers in milliseconds and soon gets every slot.
    ///   - retryInterval: the first wait between attempts to reach avahi (later ones double, up
    ///     to 30 s).
    ///   - clock: the time the loop's retries and coalescing are measured on.
    private let clock: any HostClock

    public init(
        serviceType: String = "_lockstep._udp", logger: Logger, maxTrackedServices: Int = 24,
        initialTrackedServices: Int = 4, retryInterval: Duration = .seconds(2), clock: any HostClock = MonotonicClock()
    ) {
        precondition(maxTrackedServices > 0, "maxTrackedServices must be positive")
        precondition(initialTrackedServices > 0, "initialTrackedServices must be positive")
        self.initialTrackedServices = initialTrackedServices  // the tracker keeps it within the bound
        self.clock = clock
        self.serviceType = serviceType
        self.logger = logger
        self.maxTrackedServices = maxTrackedServices
        self.retryInterval = retryInterval
    }

    deinit { stop() }

    /// The longest instance name DNS-SD allows (one DNS label), in UTF-8 bytes.
    public static let maxInstanceNameBytes = 63

    /// avahi's compat library (0.8) calls uninitialised callback pointers when the daemon goes
    /// away; zeroed allocations make them null (see `lockstep_zero_avahi_allocations`).
    private static let zeroedAllocations: Int32 = lockstep_zero_avahi_allocations()

    /// Publishes our service and browses for others; events arrive on the returned stream.
    ///
    /// `instanceName` is a label for humans (avahi adds ` #2` etc. on a collision); longer
    /// than 63 UTF-8 bytes, it is cut at a character boundary; empty, avahi uses the host
    /// name. `txt` must encode (see ``TXTRecord/encode(_:)``). Sets `AVAHI_COMPAT_NOWARN=1`
    /// unless the environment already has it, to silence the compat layer's warning.
    /// Call once; a second call returns a stream that is already finished.
    public func start(instanceName: String, port: UInt16, txt: [String: String]) throws(TXTRecordError) -> AsyncStream<DiscoveryEvent> {
        _ = Self.zeroedAllocations
        let txtBytes = try TXTRecord.encode(txt)
        let (stream, continuation) = AsyncStream.makeStream(of: DiscoveryEvent.self, bufferingPolicy: .unbounded)
        let configuration = DNSSDEventLoop.Configuration(
            serviceType: serviceType, instanceName: Self.truncated(instanceName), port: port,
            maxServices: maxTrackedServices, initialServices: initialTrackedServices, slowRef: Self.slowRef,
            retryInterval: retryInterval)
        let logger = self.logger
        let clock = self.clock
        control.withLock { control in
            guard case .idle = control else {
                logger.error("DNS-SD discovery started twice; the second stream is finished at once")
                continuation.finish()
                return
            }
            setenv("AVAHI_COMPAT_NOWARN", "1", 0)
            guard let mailbox = DNSSDMailbox() else {
                let reason = "cannot create a pipe (errno \(errno))"
                logger.error("DNS-SD cannot start", metadata: ["dnssd.reason": "\(reason)"])
                continuation.yield(.daemonUnavailable(reason: reason))
                continuation.finish()
                control = .stopped
                return
            }
            let thread = JoinableThread.start {
                DNSSDEventLoop(
                    configuration: configuration, txt: txtBytes, mailbox: mailbox, continuation: continuation,
                    logger: logger, clock: clock
                ).run()
            }
            guard let thread else {
                let reason = "cannot start the DNS-SD thread"
                logger.error("DNS-SD cannot start", metadata: ["dnssd.reason": "\(reason)"])
                continuation.yield(.daemonUnavailable(reason: reason))
                continuation.finish()
                control = .stopped
                return
            }
            control = .running(mailbox, thread)
        }
        return stream
    }

    /// Publishes a new TXT record for our service (e.g. the group tag changed). It is also
    /// used for every later re-registration. Ignored unless started.
    ///
    /// Peers see the change about 1–2 s later: avahi's resolver keeps the old TXT record until
    /// it is flushed from the cache (RFC 6762 cache-flush, 1 s) and only then reports the new one.
    public func updateTXT(_ txt: [String: String]) throws(TXTRecordError) {
        let bytes = try TXTRecord.encode(txt)
        send(.updateTXT(bytes))
    }

    /// Group tags to take for ours besides the one in our TXT record (the group's tags of the
    /// days either side of today). Ignored unless started.
    public func recognise(groupTags: Set<String>) {
        send(.recognise(groupTags))
    }

    /// While a join looks for a device of the group it joins that has opened an invite, instances
    /// of another group are resolved rather than parked (an invite shows in the TXT record a
    /// second or two after it opens). Ignored unless started.
    public func seekInviters(_ on: Bool) {
        send(.seekInviters(on))
    }

    /// The instances whose peer is reachable, all of them (each call replaces the last set):
    /// once reported, their resolve and address queries are closed, and only the browse follows
    /// them, so a reachable peer costs no `DNSServiceRef` (in avahi's compat layer, a thread and
    /// a D-Bus connection each). An instance leaving the set is resolved again. Ignored unless
    /// started.
    public func settle(_ instances: Set<Membership.Sighting>) {
        send(.settle(Self.keys(instances)))
    }

    /// Settled instances to resolve again now (their peer restarted: its port or addresses may
    /// have changed); they are closed again once reported. Ignored unless started.
    public func refresh(_ instances: Set<Membership.Sighting>) {
        send(.refresh(Self.keys(instances)))
    }

    /// Names of instances not to resolve, all of them (each call replaces the last set): those
    /// of peers the agent reaches without DNS-SD and does not need it for. An instance so named
    /// that was never reported is not resolved while its name stays in the set (see
    /// ``DNSSDTracker/onSpared(_:)``). Names are cut as instance names are. Ignored unless started.
    public func spare(_ names: Set<String>) {
        send(.spare(Set(names.map(Self.truncated))))
    }

    private static func keys(_ instances: Set<Membership.Sighting>) -> Set<DNSSDServiceKey> {
        Set(instances.map { DNSSDServiceKey(name: $0.instance, interfaceIndex: $0.interfaceIndex) })
    }

    private func send(_ command: DNSSDMailbox.Command) {
        control.withLock { control in
            if case .running(let mailbox, _) = control { mailbox.send(command) }
        }
    }

    /// Withdraws our service, stops browsing, ends the thread and finishes the stream. Returns
    /// when all that is done (normally a few milliseconds: each `DNSServiceRefDeallocate` is a
    /// D-Bus round trip to avahi). Idempotent.
    public func stop() {
        let running: (DNSSDMailbox, pthread_t)? = control.withLock { control in
            defer { control = .stopped }
            if case .running(let mailbox, let thread) = control { return (mailbox, thread) }
            return nil
        }
        guard let (mailbox, thread) = running else { return }
        mailbox.send(.stop)
        if pthread_equal(thread, pthread_self()) != 0 {
            pthread_detach(thread)
        } else {
            JoinableThread.join(thread)
        }
    }

    /// `name` cut to at most ``maxInstanceNameBytes`` UTF-8 bytes at a character boundary.
    static func truncated(_ name: String) -> String {
        name.truncated(toUTF8: maxInstanceNameBytes)
    }
}
