import Hummingbird
import NIOCore

/// Hummingbird's request context plus the TCP peer's address (for the loopback rule of ``WebAccess``).
public struct WebRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The browser's address.
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
    }

    /// Whether the peer is on the loopback interface.
    public var peerIsLoopback: Bool { remoteAddress?.ipAddress.map(WebEndpoint.isLoopback) ?? false }
}
