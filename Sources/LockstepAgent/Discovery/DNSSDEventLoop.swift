#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CDNSSD
import LockstepCore
import LockstepPlayerProtocol
import Logging
import Synchronization

/// The DNS-SD thread: owns every `DNSServiceRef`, `poll()`s their sockets and the mailbox pipe,
/// runs their callbacks, feeds results to a ``DNSSDTracker`` and carries out its directives.
///
/// Confined to one thread (the compat library is not thread-safe); created and run there by
/// ``DNSSDDiscovery/start(instanceName:port:txt:)``. It blocks in `poll()`, with a timeout only
/// for the next retry (while the daemon is unavailable) or for emitting collected changes
/// (`coalescing`, 50 ms after the first change): never a busy loop.
/// Callbacks only record results; directives (new or cancelled refs, events) are carried out
/// after `DNSServiceProcessResult` returns, so no ref is deallocated inside its own callback.
final class DNSSDEventLoop {
    struct Configuration: Sendable {
        var serviceType: String
        var domain = "local."
        var instanceName: String
        var port: UInt16
        var maxServices: Int
        /// Slots at first and at least (``DNSSDTracker/onRefOpened(slow:)``).
        var initialServices: Int
        /// Opening a ref that takes longer counts as slow.
        var slowRef: Duration
        /// The wait before the first attempt after a loss or a failed start; later waits
        /// double, up to ``longestRetry`` (``DNSSDRetry``).
        var retryInterval: Duration
        /// The longest wait between two attempts while avahi cannot be reached.
        var longestRetry: Duration = .seconds(30)
        /// How long changes are collected before `serviceUpdated` events go out.
        var coalescing: Duration = .milliseconds(50)
    }

    private enum Availability { case unknown, available, unavailable }

    private let configuration: Configuration
    private var txt: [UInt8]
    private let mailbox: DNSSDMailbox
    private let continuation: AsyncStream<DiscoveryEvent>.Continuation
    private let logger: Logger
    private let clock: any HostClock

    private var tracker: DNSSDTracker
    private var registration: DNSSDServiceRef?
    private var browser: DNSSDServiceRef?
    private var resolvers: [DNSSDServiceKey: DNSSDServiceRef] = [:]
    private var addressQueries: [DNSSDHostKey: [DNSSDServiceRef]] = [:]
    private var availability = Availability.unknown
    /// Monotonic nanoseconds of the next connection attempt, while not connected.
    private var retryAt: Int64?
    private var retry: DNSSDRetry
    /// Monotonic nanoseconds at which collected changes are emitted.
    private var flushAt: Int64?
    /// Set by a callback that saw the connection fail; acted on after the callback returns.
    private var lostReason: String?
    private var registeredName: String?
    private var pending: [DNSSDTracker.Directive] = []
    private var stopping = false
    /// When the resolve slots are next time-shared (while instances wait for one).
    private var rotateAt: Int64?
    /// How often they are, in ns.
    static let rotation: Int64 = 500_000_000

    init(
        configuration: Configuration, txt: [UInt8], mailbox: DNSSDMailbox,
        continuation: AsyncStream<DiscoveryEvent>.Continuation, logger: Logger, clock: any HostClock
    ) {
        self.clock = clock
        self.configuration = configuration
        self.txt = txt
        self.mailbox = mailbox
        self.continuation = continuation
        self.logger = logger
        self.tracker = DNSSDTracker(maxServices: configuration.maxServices, initialLimit: configuration.initialServices)
        // At least a millisecond: a zero wait would be a busy loop.
        let first = max(1_000_000, Self.nanoseconds(configuration.retryInterval))
        self.retry = DNSSDRetry(first: first, longest: max(first, Self.nanoseconds(configuration.longestRetry)))
        _ = tracker.onOwnTXT(TXTRecord.decode(txt))
    }

    // MARK: Loop

    func run() {
        connect()
        while !stopping {
            let refs = activeRefs
            var fds = [pollfd(fd: mailbox.readFD, events: Int16(POLLIN), revents: 0)]
            fds += refs.map { pollfd(fd: $0.socket, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&fds, nfds_t(fds.count), pollTimeout())
            if ready < 0 {
                let error = errno
                if error == EINTR { continue }
                // Cannot happen with valid arguments; fail loudly but keep the process alive.
                logger.error("DNS-SD poll failed", metadata: ["dnssd.errno": "\(error)"])
                continuation.yield(.daemonUnavailable(reason: "poll() failed: errno \(error)"))
                break
            }
            if fds[0].revents != 0 {
                handle(mailbox.take())
                carryOut()
            }
            for (index, ref) in refs.enumerated() where !stopping && lostReason == nil {
                let events = Int32(fds[index + 1].revents)
                guard events != 0, ref.isActive else { continue }
                if events & Int32(POLLIN) == 0 {
                    lostReason = "connection to avahi-daemon lost (\(ref.label): socket error)"
                } else if let error = ref.processResult() {
                    lostReason = "connection to avahi-daemon lost (\(ref.label): DNSServiceProcessResult \(error))"
                }
                carryOut()
            }
            if let reason = lostReason {
                lostReason = nil
                lose(reason: reason)
            }
            let now = clock.now()
            if let flushAt, now >= flushAt {
                self.flushAt = nil
                pending += tracker.flush()
                carryOut()
            } else if flushAt == nil, tracker.hasPendingUpdates {
                flushAt = now + Self.nanoseconds(configuration.coalescing)
            }
            if tracker.waiting.isEmpty {
                rotateAt = nil
            } else if let rotateAt, now >= rotateAt {
                self.rotateAt = now + Self.rotation
                pending += tracker.rotate()
                carryOut()
            } else if rotateAt == nil {
                rotateAt = now + Self.rotation
            }
            if !stopping, availability != .available, let retryAt, now >= retryAt {
                // Cheap looks first: an attempt costs the compat library a thread and a D-Bus
                // connection (``DNSSDRetry``).
                if retry.shouldAttempt(at: now, busMissing: DNSSDDiagnosis.missingSystemBus != nil, daemon: DNSSDDiagnosis.avahiPID()) {
                    connect()
                } else {
                    self.retryAt = retry.nextLook(after: now)
                }
            }
        }
        tearDown()
        logger.debug("DNS-SD stopped")
        continuation.finish()
    }

    private var activeRefs: [DNSSDServiceRef] {
        var refs: [DNSSDServiceRef] = []
        if let registration { refs.append(registration) }
        if let browser { refs.append(browser) }
        refs += resolvers.values
        refs += addressQueries.values.joined()
        return refs
    }

    /// Milliseconds until the next timed action (a retry while unavailable, or a flush of
    /// collected changes), -1 for none.
    private func pollTimeout() -> Int32 {
        let deadlines = [availability != .available ? retryAt : nil, flushAt, rotateAt].compactMap { $0 }
        guard let deadline = deadlines.min() else { return -1 }
        let left = deadline - clock.now()
        // Round up, so an action is never early (which would mean a zero-timeout spin).
        return left <= 0 ? 0 : Int32(clamping: (left + 999_999) / 1_000_000)
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000
    }

    private func handle(_ commands: [DNSSDMailbox.Command]) {
        for command in commands {
            switch command {
            case .stop:
                stopping = true
            case .seekInviters(let on):
                pending += tracker.seekInviters(on)
            case .recognise(let tags):
                pending += tracker.onRecognisedTags(tags)
            case .settle(let keys):
                pending += tracker.onSettled(keys)
            case .refresh(let keys):
                pending += tracker.onRefresh(keys)
            case .spare(let names):
                pending += tracker.onSpared(names)
            case .updateTXT(let bytes):
                guard bytes != txt else { continue }
                txt = bytes
                pending += tracker.onOwnTXT(TXTRecord.decode(bytes))
                guard let registration else { continue }  // used at the next (re)connect
                do {
                    try registration.updateTXT(bytes)
                    logger.debug("DNS-SD TXT record updated")
                } catch {
                    logger.warning("DNS-SD TXT update failed, re-registering", metadata: ["dnssd.error": "\(error)"])
                    registration.cancel()
                    self.registration = nil
                    registeredName = nil
                    do {
                        self.registration = try makeRegistration()
                    } catch {
                        lostReason = "cannot re-register (DNSServiceRegister: \(error))"
                    }
                }
            }
        }
    }

    // MARK: Connection

    private func connect() {
        retryAt = nil
        do {
            registration = try makeRegistration()
        } catch {
            unavailable(reason: DNSSDDiagnosis.diagnose(operation: "DNSServiceRegister", error: error))
            return
        }
        do {
            browser = try DNSSDServiceRef.browse(type: configuration.serviceType, domain: configuration.domain) {
                [unowned self] reply in onBrowseReply(reply)
            }
        } catch {
            tearDown()
            unavailable(reason: DNSSDDiagnosis.diagnose(operation: "DNSServiceBrowse", error: error))
            return
        }
        availability = .available
        retry.connected()
        logger.info("DNS-SD available", metadata: ["dnssd.type": "\(configuration.serviceType)"])
        continuation.yield(.daemonAvailable)
    }

    private func makeRegistration() throws(DNSSDError) -> DNSSDServiceRef {
        try DNSSDServiceRef.register(
            name: configuration.instanceName, type: configuration.serviceType, port: configuration.port, txt: txt
        ) { [unowned self] reply in onRegisterReply(reply) }
    }

    /// The daemon went away under us: drop everything and retry later.
    private func lose(reason: String) {
        tearDown()
        unavailable(reason: reason)
    }

    private func unavailable(reason: String) {
        let now = clock.now()
        let wait = retry.failed(at: now, daemon: DNSSDDiagnosis.avahiPID())
        retryAt = retry.nextLook(after: now)
        let retryIn = "\(Double(wait) / 1e9) s, sooner once avahi-daemon starts"
        if availability == .unavailable {
            logger.debug("DNS-SD still unavailable", metadata: ["dnssd.reason": "\(reason)", "dnssd.retry": "\(retryIn)"])
            return
        }
        availability = .unavailable
        logger.warning("DNS-SD unavailable, will retry", metadata: ["dnssd.reason": "\(reason)", "dnssd.retry": "\(retryIn)"])
        continuation.yield(.daemonUnavailable(reason: reason))
    }

    /// Deallocates every ref (withdrawing our registration) and forgets what was discovered.
    private func tearDown() {
        for ref in resolvers.values { ref.cancel() }
        for refs in addressQueries.values { for ref in refs { ref.cancel() } }
        resolvers.removeAll()
        addressQueries.removeAll()
        browser?.cancel()
        browser = nil
        registration?.cancel()
        registration = nil
        registeredName = nil
        tracker.reset()
        pending.removeAll()
        flushAt = nil
    }

    // MARK: Replies (inside DNSServiceProcessResult: record only)

    private func onRegisterReply(_ reply: DNSSDServiceRef.Reply) {
        switch reply {
        case .registered(let name):
            guard name != registeredName else { return }
            registeredName = name
            logger.info("DNS-SD registered", metadata: ["dnssd.instance": "\(name)"])
            pending.append(.emit(.registered(instanceName: name)))
        case .failed(let error, _):
            lostReason = "connection to avahi-daemon lost (registration: \(error))"
        default:
            break
        }
    }

    private func onBrowseReply(_ reply: DNSSDServiceRef.Reply) {
        switch reply {
        case .browse(let added, let name, _, _, let interfaceIndex):
            logger.trace(
                "DNS-SD browse", metadata: ["dnssd.instance": "\(name)", "dnssd.interface": "\(interfaceIndex)", "dnssd.added": "\(added)"])
            pending += tracker.onBrowse(added: added, name: name, interfaceIndex: interfaceIndex)
        case .failed(let error, _):
            lostReason = "connection to avahi-daemon lost (browse: \(error))"
        default:
            break
        }
    }

    private func onResolveReply(_ key: DNSSDServiceKey, _ reply: DNSSDServiceRef.Reply) {
        switch reply {
        case .resolved(let hostTarget, let port, let txt, _):
            pending += tracker.onResolved(key, hostTarget: hostTarget, port: port, txt: TXTRecord.decode(txt))
        case .failed(let error, let interfaceIndex):
            if interfaceIndex == 0 {
                lostReason = "connection to avahi-daemon lost (resolve: \(error))"
            } else {
                // avahi gives up after 5 s without an answer but keeps listening: a later answer
                // still arrives on this ref, so it stays.
                logger.debug("DNS-SD resolve timed out", metadata: ["dnssd.instance": "\(key)"])
            }
        default:
            break
        }
    }

    private func onAddressReply(_ host: DNSSDHostKey, _ reply: DNSSDServiceRef.Reply) {
        switch reply {
        case .record(let added, let rrtype, let rdata, _):
            let expected = Int(rrtype) == kDNSServiceType_A ? 4 : Int(rrtype) == kDNSServiceType_AAAA ? 16 : -1
            guard rdata.count == expected else { return }
            pending += tracker.onAddress(host, address: rdata, added: added)
        case .failed(let error, let interfaceIndex):
            if interfaceIndex == 0 {
                lostReason = "connection to avahi-daemon lost (address query: \(error))"
            } else {
                logger.debug("DNS-SD address query failed", metadata: ["dnssd.host": "\(host)", "dnssd.error": "\(error)"])
            }
        default:
            break
        }
    }

    // MARK: Directives (outside callbacks)

    private func carryOut() {
        while lostReason == nil, !pending.isEmpty {
            let directive = pending.removeFirst()
            switch directive {
            case .startResolve(let key):
                do {
                    let start = clock.now()
                    resolvers[key] = try DNSSDServiceRef.resolve(
                        name: key.name, type: configuration.serviceType, domain: configuration.domain,
                        interfaceIndex: key.interfaceIndex
                    ) { [unowned self] reply in onResolveReply(key, reply) }
                    opened(refs: 1, since: start)
                } catch {
                    lostReason = "cannot resolve \(key) (DNSServiceResolve: \(error))"
                }
            case .stopResolve(let key):
                resolvers.removeValue(forKey: key)?.cancel()
            case .startAddressQueries(let host):
                do {
                    let start = clock.now()
                    var refs: [DNSSDServiceRef] = []
                    for rrtype in [kDNSServiceType_A, kDNSServiceType_AAAA] {
                        refs.append(
                            try DNSSDServiceRef.queryRecord(
                                fullName: host.host, rrtype: UInt16(rrtype), interfaceIndex: host.interfaceIndex
                            ) { [unowned self] reply in onAddressReply(host, reply) })
                    }
                    addressQueries[host] = refs
                    opened(refs: refs.count, since: start)
                } catch {
                    lostReason = "cannot query \(host) (DNSServiceQueryRecord: \(error))"
                }
            case .stopAddressQueries(let host):
                for ref in addressQueries.removeValue(forKey: host) ?? [] { ref.cancel() }
            case .emit(let event):
                log(event)
                continuation.yield(event)
            }
        }
    }

    /// Tells the tracker how fast avahi opened `refs` refs, started at `start` (it adapts the
    /// number of resolve slots to it).
    private func opened(refs: Int, since start: Int64) {
        let each = (clock.now() - start) / Int64(max(1, refs))
        pending += tracker.onRefOpened(slow: each > Self.nanoseconds(configuration.slowRef))
    }

    private func log(_ event: DiscoveryEvent) {
        switch event {
        case .serviceUpdated(let service):
            logger.debug(
                "DNS-SD service updated",
                metadata: [
                    "dnssd.instance": "\(service.instanceName)", "dnssd.interface": "\(service.interfaceIndex)",
                    "dnssd.host": "\(service.hostTarget)", "dnssd.endpoints": "\(service.endpoints)",
                    "dnssd.txt": "\(service.txt.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" })",
                ])
        case .serviceRemoved(let name, let interfaceIndex):
            logger.debug("DNS-SD service removed", metadata: ["dnssd.instance": "\(name)", "dnssd.interface": "\(interfaceIndex)"])
        default:
            break
        }
    }
}
