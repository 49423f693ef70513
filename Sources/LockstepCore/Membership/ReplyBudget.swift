/// What this node may still send to addresses that are not validated (``PathValidation``): at
/// most ``Configuration/factor`` times the bytes received from each (QUIC's anti-amplification
/// limit, RFC 9000 §8.1), and at most ``Configuration/datagramsPerSecond`` datagrams a second
/// (a token bucket), so a member spoofing a victim's address gets no amplification and little
/// reflection out of any agent.
///
/// One account per source address, bounded by ``Configuration/maxSources`` (the least recently
/// heard gives way; a forgotten source starts again with no credit, which only ever sends less).
public struct ReplyBudget: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// Bytes sent per byte received from an unvalidated address.
        public var factor: Int = 3
        /// Datagrams a second to one unvalidated address, and the burst allowed.
        public var datagramsPerSecond: Double = 64
        /// Source accounts kept, at most.
        public var maxSources: Int = 1024
        /// An account whose source has been silent this long is dropped.
        public var forgetAfter: TimeSpan = .seconds(30)

        public init() {}
    }

    public struct Account: Sendable, Equatable {
        public var received: Int64 = 0
        public var sent: Int64 = 0
        public var tokens: Double
        public var refilledAt: LocalTime
        public var heardAt: LocalTime
    }

    /// Why a datagram was held back.
    public enum Refusal: String, Sendable, Equatable {
        /// It would take what was sent past `factor` × what was received.
        case amplification = "unvalidated_amplification"
        /// Too many datagrams to that address this second.
        case rate = "unvalidated_rate"
    }

    public let configuration: Configuration
    public private(set) var accounts: [Endpoint: Account] = [:]

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    /// A datagram of `bytes` arrived from `source`.
    public mutating func onReceived(bytes: Int, from source: Endpoint, now: LocalTime) {
        var a = accounts[source] ?? newAccount(now: now)
        a.received = a.received.addingSaturating(Int64(max(0, bytes)))
        a.heardAt = now
        accounts[source] = a
    }

    /// May `bytes` go to the unvalidated `destination` now? If so, they are charged.
    public mutating func spend(bytes: Int, to destination: Endpoint, now: LocalTime) -> Refusal? {
        guard var a = accounts[destination], now - a.heardAt < configuration.forgetAfter else { return .amplification }
        let elapsed = Double(max(0, (now - a.refilledAt).ns)) / 1e9
        a.tokens = min(configuration.datagramsPerSecond, a.tokens + elapsed * configuration.datagramsPerSecond)
        a.refilledAt = now
        defer { accounts[destination] = a }
        guard a.sent.addingSaturating(Int64(max(0, bytes))) <= a.received.multipliedSaturating(by: Int64(configuration.factor)) else { return .amplification }
        guard a.tokens >= 1 else { return .rate }
        a.tokens -= 1
        a.sent = a.sent.addingSaturating(Int64(max(0, bytes)))
        return nil
    }

    /// Forgets accounts silent for ``Configuration/forgetAfter``.
    public mutating func onTick(now: LocalTime) {
        accounts = accounts.filter { now - $0.value.heardAt < configuration.forgetAfter }
    }

    private mutating func newAccount(now: LocalTime) -> Account {
        if accounts.count >= configuration.maxSources {
            onTick(now: now)
            if accounts.count >= configuration.maxSources, let oldest = accounts.min(by: { $0.value.heardAt < $1.value.heardAt })?.key {
                accounts[oldest] = nil
            }
        }
        return Account(tokens: configuration.datagramsPerSecond, refilledAt: now, heardAt: now)
    }
}
