/// Versions of Lockstep and of the player protocol (the peer protocol's is `PeerProtocol.version`
/// in `LockstepPeerWire`: a player needs neither it nor the peer wire).
public enum LockstepVersion {
    /// The release of this build.
    public static let current = "0.2.0"
    /// The player socket protocol.
    public static let playerProtocol = PlayerProtocol.version
}
