import LockstepCore
import LockstepPeerWire

/// Anti-amplification (review finding M3): what goes to an address that is not validated
/// (``Node/isValidated(_:now:)``) stays within its ``ReplyBudget``; the rest is held back and
/// counted (`dropped_unvalidated_amplification`, `dropped_unvalidated_rate`).
extension Agent {
    /// The bytes a message takes on the wire, sealed.
    static func sealedSize(_ message: PeerMessage) -> Int {
        Envelope.headerBytes + message.encoded().count + Envelope.tagBytes
    }

    /// An authenticated datagram arrived: its bytes are credit for answers to its source (unless
    /// that source will still be validated once the datagram is handled).
    func credit(_ d: PeerTransport.Inbound, now: LocalTime) {
        guard !inPlace(&node, { $0.isValidated(d.source, now: now, onceHeard: true) }) else { return }
        replyBudget.onReceived(bytes: Self.sealedSize(d.message), from: d.source, now: now)
    }

    /// Whether `message` may go to `endpoint` now (charging an unvalidated address's budget).
    func mayTransmit(_ message: PeerMessage, to endpoint: Endpoint, now: LocalTime) -> Bool {
        guard !inPlace(&node, { $0.isValidated(endpoint, now: now) }) else { return true }
        guard let refusal = replyBudget.spend(bytes: Self.sealedSize(message), to: endpoint, now: now) else { return true }
        transport?.drop(refusal.rawValue, "held back a datagram to an address that has not shown it is a peer's", from: endpoint)
        return false
    }
}
