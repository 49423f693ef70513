import LockstepCore

/// The group key's protocol on one agent: rotating to a new key without restarting the group,
/// installing a key a peer rotated to, and telling a peer that still speaks the previous key
/// (`Protocol/peer-protocol.md` §2, §4.12–4.13).
///
/// A pure instance, as the core's: every input is an `on…` call with the current local time,
/// every output a ``Directive``; the agent carries them out and folds ``nextDeadline`` into its
/// one timer.
///
/// Rotation: the new key (same group id, epoch + 1) goes to every reachable peer in a
/// `key_update` sealed under the current key, sent again every ``Configuration/retryInterval``
/// until acknowledged (at most ``Configuration/maxRetries`` times). Every agent that installs it
/// accepts both keys, and keeps *sealing* under the old one for ``Configuration/grace`` (so that a
/// peer that has not received the new key yet is not cut off), then switches. A peer heard
/// sealing under the previous key is sent the current one (a *hint*), at most every
/// ``Configuration/hintInterval``.
///
/// What a `key_update` must be to be installed: sealed under this agent's *current* key (the
/// previous key cannot install keys of its own), and for exactly the next epoch (a jump to the
/// last epoch would block every later rotation). A key is acknowledged only once it is saved.
///
/// What rotation does not do (see the security review, finding H3): it does not remove a
/// member. Every member, including one meant to be excluded, receives the new key; the only
/// removal is a new group with new codes, until members have identities of their own.
public struct KeyRotation: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// Sealing under a new key starts this long after it is installed.
        public var grace: TimeSpan = .seconds(3)
        /// Unacknowledged `key_update`s are sent again this often…
        public var retryInterval: TimeSpan = .milliseconds(200)
        /// …at most this many times.
        public var maxRetries = 10
        /// A peer that speaks the previous key is told the current one at most this often.
        public var hintInterval: TimeSpan = .seconds(1)
        /// At most this many peers' hint times are remembered (the oldest are forgotten first).
        public var maxHints = 256

        public init() {}
    }

    /// What to do.
    public indirect enum Directive: Sendable, Equatable {
        /// Save `group` (the agent's state directory); only if that works, carry out `then`.
        /// If it fails, call ``onInstallFailed()``.
        case install(GroupIdentity, then: [Directive])
        /// Open datagrams sealed under these keys (and no others).
        case accept([GroupKey])
        /// Seal datagrams under this key from now on.
        case sealWith(GroupKey)
        /// Send to a peer (the agent knows its path), sealed as usual.
        case send(PeerMessage, to: PeerID)
        /// Send back to where a datagram came from, sealed under `key` (nil: as usual).
        case reply(PeerMessage, to: Endpoint, sealedWith: GroupKey?)
        /// A `key_update` was refused (counted by the shell).
        case refused(Refusal, from: PeerID)
    }

    /// Why a `key_update` was refused.
    public enum Refusal: String, Sendable, Equatable {
        /// Sealed under another key than the current one (the previous key cannot install keys).
        case notUnderCurrentKey = "key_update_not_current"
        /// Not for the next epoch.
        case notNextEpoch = "key_update_not_next"
    }

    /// Why a rotation cannot be made.
    public enum RotationError: Error, Equatable, Sendable {
        /// The epoch counter is at its end: only a new group (new codes) can follow.
        case epochExhausted
    }

    /// A rotation in progress on this agent.
    struct Pending: Sendable, Equatable {
        var epoch: UInt32
        /// When to start sealing under the new key.
        var switchAt: LocalTime
        /// Peers that have not acknowledged the new key (only on the agent that rotated).
        var awaiting: Set<PeerID>
        var retries: Int
        var nextRetry: LocalTime
    }

    public let configuration: Configuration
    /// The group and its keys as this agent holds them.
    public private(set) var group: GroupIdentity
    private(set) var pending: Pending?
    /// The group as it was before the install in progress, restored if it cannot be saved.
    private var beforeInstall: (group: GroupIdentity, pending: Pending?)?
    /// When each peer was last told the current key because it spoke the previous one.
    private var hints: [PeerID: LocalTime] = [:]

    public init(group: GroupIdentity, configuration: Configuration = .init()) {
        self.group = group
        self.configuration = configuration
    }

    /// The keys to open datagrams with at start: the current and, if any, the previous one.
    public var acceptedKeys: [GroupKey] {
        [group.currentKey] + (group.previous.map { [$0] } ?? [])
    }

    /// The largest epoch a rotation may reach.
    public static let lastEpoch = UInt32.max - 1

    // MARK: - Inputs

    /// This agent moves to another group (created or joined) at once: only its key is accepted.
    public mutating func onSwitch(to next: GroupIdentity) -> [Directive] {
        beforeInstall = (group, pending)
        pending = nil
        hints = [:]
        group = next
        return [.install(next, then: [.accept([next.currentKey]), .sealWith(next.currentKey)])]
    }

    /// This agent rotates the key, with `newKey`'s bytes (the agent draws them) at the next epoch.
    public mutating func onRotate(newKeyBytes: [UInt8], reachable: [PeerID], now: LocalTime) throws(RotationError) -> [Directive] {
        guard group.epoch < Self.lastEpoch, let next = GroupKey(bytes: newKeyBytes, epoch: group.epoch + 1) else { throw .epochExhausted }
        var updated = group
        updated.rotate(to: next)
        beforeInstall = (group, pending)
        group = updated
        pending = Pending(epoch: next.epoch, switchAt: now + configuration.grace, awaiting: Set(reachable), retries: 0, nextRetry: now + configuration.retryInterval)
        let update = PeerMessage.keyUpdate(epoch: next.epoch, key: next.bytes)
        return [.install(updated, then: [.accept(acceptedKeys)] + reachable.map { .send(update, to: $0) })]
    }

    /// The agent could not save the group it was installing: it keeps the one it had, and
    /// acknowledges nothing.
    public mutating func onInstallFailed() {
        guard let before = beforeInstall else { return }
        group = before.group
        pending = before.pending
        beforeInstall = nil
    }

    /// A `key_update` from `sender` (via `source`), sealed under the key of epoch byte `sealedWith`.
    public mutating func onKeyUpdate(epoch: UInt32, key: [UInt8], from sender: PeerID, source: Endpoint, sealedWith epochByte: UInt8, now: LocalTime) -> [Directive] {
        let ack = Directive.reply(.keyAck(epoch: epoch), to: source, sealedWith: nil)
        // Already installed (a retransmission, or the update of a rotation we made): acknowledge again.
        if epoch == group.epoch, key == group.key { return [ack] }
        guard epochByte == UInt8(truncatingIfNeeded: group.epoch) else { return [.refused(.notUnderCurrentKey, from: sender)] }
        guard group.epoch < Self.lastEpoch, epoch == group.epoch + 1, let next = GroupKey(bytes: key, epoch: epoch) else {
            return [.refused(.notNextEpoch, from: sender)]
        }
        var updated = group
        updated.rotate(to: next)
        beforeInstall = (group, pending)
        group = updated
        pending = Pending(epoch: epoch, switchAt: now + configuration.grace, awaiting: [], retries: 0, nextRetry: now + configuration.retryInterval)
        return [.install(updated, then: [.accept(acceptedKeys), ack])]
    }

    /// `sender` installed the key of `epoch`.
    public mutating func onKeyAck(epoch: UInt32, from sender: PeerID) {
        guard var p = pending, p.epoch == epoch else { return }
        p.awaiting.remove(sender)
        pending = p
    }

    /// Any other authenticated datagram from `sender` (via `source`), sealed under the key of
    /// epoch byte `sealedWith`: a peer still sealing under the previous key may have missed the
    /// rotation, so it is told the current key (sealed under the one it speaks, or it could not
    /// read it). Not during our own grace period: then every peer still speaks the old key.
    public mutating func onDatagram(from sender: PeerID, source: Endpoint, sealedWith epochByte: UInt8, now: LocalTime) -> [Directive] {
        guard epochByte != UInt8(truncatingIfNeeded: group.epoch) else { return [] }
        if let p = pending, now < p.switchAt { return [] }
        if let last = hints[sender], now - last < configuration.hintInterval { return [] }
        guard let theirs = group.previous, UInt8(truncatingIfNeeded: theirs.epoch) == epochByte else { return [] }
        if hints.count >= configuration.maxHints, hints[sender] == nil, let oldest = hints.min(by: { $0.value < $1.value })?.key {
            hints[oldest] = nil
        }
        hints[sender] = now
        return [.reply(.keyUpdate(epoch: group.epoch, key: group.key), to: source, sealedWith: theirs)]
    }

    /// Time passes: `key_update`s sent again to peers that have not acknowledged them (among
    /// those still `reachable`), and sealing under the new key once the grace period is over.
    public mutating func onTick(now: LocalTime, reachable: (PeerID) -> Bool) -> [Directive] {
        guard var p = pending, p.epoch == group.epoch else {
            pending = nil
            return []
        }
        var out: [Directive] = []
        if now >= p.nextRetry {
            p.nextRetry = now + configuration.retryInterval
            if !p.awaiting.isEmpty && p.retries < configuration.maxRetries {
                p.retries += 1
                let update = PeerMessage.keyUpdate(epoch: group.epoch, key: group.key)
                out += p.awaiting.sorted().filter(reachable).map { .send(update, to: $0) }
            }
        }
        if now >= p.switchAt {
            out.append(.sealWith(group.currentKey))
            pending = nil
        } else {
            pending = p
        }
        return out
    }

    /// When ``onTick(now:reachable:)`` next has work, if ever.
    public var nextDeadline: LocalTime? {
        guard let p = pending else { return nil }
        let retrying = !p.awaiting.isEmpty && p.retries < configuration.maxRetries
        return retrying ? min(p.switchAt, p.nextRetry) : p.switchAt
    }

    /// Peers that have not acknowledged this agent's rotation.
    public var unacknowledged: Int { pending?.awaiting.count ?? 0 }
}
