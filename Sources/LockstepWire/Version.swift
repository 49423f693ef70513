/// Versions of Lockstep and of its two protocols.
public enum LockstepVersion {
    /// The release of this build.
    public static let current = "0.1.0"
    /// The peer wire protocol (the version byte of every datagram).
    public static let peerProtocol = Int(Envelope.version)
    /// The player socket protocol.
    public static let playerProtocol = PlayerProtocol.version
}
