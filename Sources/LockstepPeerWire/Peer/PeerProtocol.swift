/// The peer protocol (`Protocol/peer-protocol.md`): what agents send each other.
public enum PeerProtocol {
    /// The version this build speaks: the envelope's version byte and the DNS-SD TXT `v`.
    public static let version = 4
}
