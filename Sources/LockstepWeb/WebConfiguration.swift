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

/// What `lockstepd --web` serves and where.
public struct WebConfiguration: Sendable {
    /// Where to listen.
    public var endpoint: WebEndpoint
    /// The agent's player socket: every browser WebSocket is relayed to it.
    public var socketPath: String
    /// A folder of media files served at `/media/` (with HTTP range requests), or nil.
    public var mediaDirectory: String?
    /// Where the current pairing code is written (mode 0600), for `cat` on the agent's machine.
    public var codeFile: String?

    public init(endpoint: WebEndpoint, socketPath: String, mediaDirectory: String? = nil, codeFile: String? = nil) {
        self.endpoint = endpoint
        self.socketPath = socketPath
        self.mediaDirectory = mediaDirectory
        self.codeFile = codeFile
    }
}

extension WebConfiguration {
    /// The configuration from `lockstepd`'s `--web` and `--web-media` (nil: no web endpoint).
    /// Checks both once, here; the pairing code goes to a file beside the player socket.
    public init?(settings: (endpoint: String?, mediaDirectory: String?), socketPath: String) throws(WebEndpoint.Invalid) {
        guard let spec = settings.endpoint else {
            if settings.mediaDirectory != nil { throw WebEndpoint.Invalid(description: "--web-media needs --web") }
            return nil
        }
        let endpoint = try WebEndpoint(parsing: spec)
        if let media = settings.mediaDirectory {
            var st = stat()
            guard stat(media, &st) == 0, st.st_mode & S_IFMT == S_IFDIR else {
                throw WebEndpoint.Invalid(description: "--web-media: '\(media.prefix(200))' is not a folder")
            }
        }
        self.init(endpoint: endpoint, socketPath: socketPath, mediaDirectory: settings.mediaDirectory, codeFile: socketPath + ".web-code")
    }
}
