import Crypto
import LockstepCore

/// The group's members and keys on one agent (`Protocol/peer-protocol.md` §2.3, §4.12–4.14):
/// who belongs (``Roster``), the group key of each epoch, and removing a device so that it can
/// neither read nor send anything from then on.
///
/// A pure instance, as the core's: every input is an `on…` call with the current local time,
/// every output a ``Directive``; the agent carries them out and folds ``nextDeadline`` into its
/// one timer.
///
/// - Admission: a device that holds the group's key (a join code) announces its device key
///   (`member_key`, sealed under the group key); members admit it unless it was removed.
/// - A new epoch (`group rotate`, `group remove`) draws a new key and sends it to each member
///   *pairwise* (`epoch_key`, sealed under the key that device and this one share from their
///   device keys), never under the old group key: a removed device, or anyone holding an old
///   join code, never sees it. It carries every removal the sender knows.
/// - Two epochs made at once (a partition) converge: the higher epoch wins, and of two keys
///   with one epoch the one with the smaller ``GroupKey/keyID``; an agent whose removals the
///   winning key does not cover (the key may have reached a device removed on the other side)
///   makes a new epoch at once.
/// - A member still speaking an older key (it was away) is sent the current one pairwise
///   (``onUndecryptable(from:epochByte:source:now:)``); a removed device is sent nothing.
/// - The previous key is accepted for ``Configuration/previousKeyLife`` after a new one is
///   installed (or after the agent starts), then forgotten.
public struct GroupMembers: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// After a rotation (not a removal), sealing under the new key starts this long after it
        /// is installed, so that members that have not received it yet are not cut off.
        public var grace: TimeSpan = .seconds(3)
        /// The previous key is accepted this long after a new one is installed, then forgotten.
        public var previousKeyLife: TimeSpan = .seconds(30)
        /// Unacknowledged `epoch_key`s are sent again this often…
        public var retryInterval: TimeSpan = .milliseconds(200)
        /// …at most this many times (members away longer get the key when they come back).
        public var maxRetries = 25
        /// A member speaking another key is sent ours at most this often.
        public var pushInterval: TimeSpan = .seconds(1)
        /// Members announce their device key to every reachable member this often.
        public var announceInterval: TimeSpan = .seconds(30)
        /// An admission or a new name is saved this long after it, with any that follow: one
        /// write while a group of 64 forms, not one per member (each is a synced file). Lost in a
        /// crash, it comes back with the member's next announcement.
        public var saveDelay: TimeSpan = .seconds(1)
        /// A save that failed is tried again this long after.
        public var saveRetry: TimeSpan = .seconds(10)

        public init() {}
    }

    /// What to do.
    public indirect enum Directive: Sendable, Equatable {
        /// Save `group` (the agent's state directory); only if that works, carry out `then`.
        /// If it fails, call ``onInstallFailed()``.
        case install(GroupIdentity, then: [Directive])
        /// Save `group`; nothing waits on it (admissions and names, ``Configuration/saveDelay``).
        /// If it fails, call ``onSaveFailed(now:)``.
        case save(GroupIdentity)
        /// Open datagrams sealed under these group keys (and no others).
        case accept([GroupKey])
        /// Open pairwise-sealed datagrams from these members, under these keys (and no others).
        case acceptPairs([PeerID: GroupKey])
        /// Seal datagrams under this group key from now on.
        case sealWith(GroupKey)
        /// Send to a peer (the agent knows its path), sealed under the group key, or under the
        /// key this agent shares with it alone (`pairwise`).
        case send(PeerMessage, to: PeerID, pairwise: Bool)
        /// Send to a datagram's source, sealed under the key shared with `peer`.
        case sendPairwise(PeerMessage, to: Endpoint, peer: PeerID)
        /// A message was refused (counted by the shell).
        case refused(Refusal, from: PeerID)
        /// Something a person should see in the log.
        case notice(Notice)
    }

    /// Why a message was refused.
    public enum Refusal: String, Sendable, Equatable {
        /// From a device removed from the group.
        case removedMember = "removed_member"
        /// A `member_key` whose key is not its sender's (the peer id derives from the key).
        case notOwnKey = "member_key_not_own"
        /// The roster is full.
        case rosterFull = "roster_full"
        /// A `member_key` from a device that is not a member, sealed under an older group key
        /// (an old join code: it must not admit anyone once a newer key exists).
        case memberKeyOldKey = "member_key_old_key"
        /// An `epoch_key` not sealed pairwise, or from a device that is not a member.
        case epochKeyNotPairwise = "epoch_key_not_pairwise"
        /// An `epoch_key` for an epoch that cannot be (past the last, or ending in 0xff).
        case invalidEpoch = "epoch_key_invalid"
    }

    /// What happened, for the log.
    public enum Notice: Sendable, Equatable {
        case admitted(PeerID, name: String)
        case removed(PeerID, by: PeerID?)
        case newEpoch(UInt32, by: PeerID?)
        case previousKeyForgotten(UInt32)
    }

    /// Why a removal or rotation cannot be made.
    public enum ChangeError: Error, Equatable, Sendable {
        /// The epoch counter is at its end: only a new group (new codes) can follow.
        case epochExhausted
        /// The device is not a member (nothing to remove), or is this agent itself.
        case notAMember
        case isThisDevice
        /// The list of removals is full.
        case rosterFull
    }

    /// Delivery of this agent's newest epoch key to members that have not acknowledged it.
    struct Delivery: Sendable, Equatable {
        var epoch: UInt32
        var awaiting: Set<PeerID>
        var retries: Int
        var nextRetry: LocalTime
    }

    public let configuration: Configuration
    public let me: DeviceIdentity
    /// The group, its keys and its roster as this agent holds them.
    public private(set) var group: GroupIdentity
    /// Removals the current key was made knowing (its key never went to them). A key made
    /// elsewhere covers what its `epoch_key` listed.
    private(set) var covered: Set<PeerID>
    private var delivery: Delivery?
    /// When sealing under the current key starts (a rotation's grace), if not yet.
    private var switchAt: LocalTime?
    /// When the previous key is forgotten.
    private var previousExpiry: LocalTime?
    private var pushed: [PeerID: LocalTime] = [:]
    private var announced: [PeerID: LocalTime] = [:]
    /// The group as it was before the install in progress, restored if it cannot be saved.
    private var beforeInstall: GroupIdentity?
    /// When admissions or names not saved yet are due to be (``Directive/save(_:)``).
    private var saveDue: LocalTime?

    public init(group: GroupIdentity, me: DeviceIdentity, configuration: Configuration = .init()) {
        self.group = group
        self.me = me
        self.configuration = configuration
        self.covered = group.roster.removed
        // A device always knows itself: its own key is in its roster.
        _ = self.group.roster.admit(me.member, name: group.roster.member(me.peerID)?.name ?? "")
        refreshPairKeys()
    }

    // MARK: - Views

    /// The keys to open datagrams with: the current and, while it lives, the previous one.
    public var acceptedKeys: [GroupKey] {
        [group.currentKey] + (group.previous.map { [$0] } ?? [])
    }

    /// The key shared with each member (removed devices have none), kept up to date with the
    /// roster (each is an X25519 agreement: not recomputed per datagram).
    public private(set) var pairKeys: [PeerID: GroupKey] = [:]

    private mutating func refreshPairKeys() {
        var out: [PeerID: GroupKey] = [:]
        for m in group.roster.members.values where m.id != me.peerID {
            out[m.id] = pairKeys[m.id] ?? me.pairKey(with: m.key, groupID: group.idBytes)
        }
        pairKeys = out
    }

    public var roster: Roster { group.roster }
    public func isRemoved(_ peer: PeerID) -> Bool { group.roster.isRemoved(peer) }
    /// Members that have not acknowledged this agent's newest key.
    public var unacknowledged: Int { delivery?.awaiting.count ?? 0 }

    /// The largest epoch a change may reach.
    public static let lastEpoch = UInt32.max - 3

    // MARK: - Inputs

    /// The agent starts: what to accept and seal with, and this device's name in its roster.
    public mutating func onStart(name: String, now: LocalTime) -> [Directive] {
        _ = group.roster.admit(me.member, name: name)
        if group.previous != nil { previousExpiry = now + configuration.previousKeyLife }
        return [.accept(acceptedKeys), .acceptPairs(pairKeys), .sealWith(group.currentKey)]
    }

    /// This agent moves to another group (created or joined) at once: only its key is accepted.
    public mutating func onSwitch(to next: GroupIdentity, name: String) -> [Directive] {
        beforeInstall = group
        var next = next
        _ = next.roster.admit(me.member, name: name)
        group = next
        pairKeys = [:]
        refreshPairKeys()
        covered = next.roster.removed
        delivery = nil
        switchAt = nil
        previousExpiry = nil
        pushed = [:]
        announced = [:]
        return [.install(next, then: [.accept([next.currentKey]), .acceptPairs(pairKeys), .sealWith(next.currentKey)])]
    }

    /// The agent could not save the group it was installing: it keeps the one it had.
    public mutating func onInstallFailed() {
        guard let before = beforeInstall else { return }
        if before.id != group.id { pairKeys = [:] }
        group = before
        beforeInstall = nil
        refreshPairKeys()
    }

    /// This agent rotates the key (`newKeyBytes`, drawn by the agent): a new epoch for the same
    /// members, sealed under the new key after the grace period.
    public mutating func onRotate(newKeyBytes: [UInt8], now: LocalTime) throws(ChangeError) -> [Directive] {
        try newEpoch(newKeyBytes: newKeyBytes, immediately: false, now: now)
    }

    /// This agent removes `peer` from the group: a new epoch whose key reaches every other
    /// member and not `peer`, sealed under at once.
    public mutating func onRemove(_ peer: PeerID, newKeyBytes: [UInt8], now: LocalTime) throws(ChangeError) -> [Directive] {
        guard peer != me.peerID else { throw .isThisDevice }
        guard group.roster.isMember(peer) else { throw .notAMember }
        guard GroupKey.nextEpoch(after: group.epoch).map({ $0 <= Self.lastEpoch }) == true else { throw .epochExhausted }
        var roster = group.roster
        guard roster.remove(peer) else { throw .rosterFull }
        group.roster = roster
        refreshPairKeys()
        return [.notice(.removed(peer, by: me.peerID))] + (try newEpoch(newKeyBytes: newKeyBytes, immediately: true, now: now))
    }

    private mutating func newEpoch(newKeyBytes: [UInt8], immediately: Bool, now: LocalTime) throws(ChangeError) -> [Directive] {
        guard let epoch = GroupKey.nextEpoch(after: group.epoch), epoch <= Self.lastEpoch,
              let next = GroupKey(bytes: newKeyBytes, epoch: epoch) else { throw .epochExhausted }
        beforeInstall = group
        group.rotate(to: next)
        covered = group.roster.removed
        previousExpiry = now + configuration.previousKeyLife
        switchAt = immediately ? nil : now + configuration.grace
        let members = group.roster.members.keys.filter { $0 != me.peerID }
        delivery = Delivery(epoch: epoch, awaiting: Set(members), retries: 0, nextRetry: now + configuration.retryInterval)
        let update = epochKeyMessage()
        var then: [Directive] = [.accept(acceptedKeys), .acceptPairs(pairKeys)]
        if immediately { then.append(.sealWith(next)) }
        then += members.sorted().map { .send(update, to: $0, pairwise: true) }
        return [.install(group, then: then), .notice(.newEpoch(epoch, by: me.peerID))]
    }

    private func epochKeyMessage() -> PeerMessage {
        .epochKey(epoch: group.epoch, key: group.key, removed: Array(group.roster.removed.sorted().prefix(PeerMessage.maxRemovedPerKey)))
    }

    /// A device announces its key, sealed under the group key of epoch byte `epochByte` (nil:
    /// vouched for otherwise, by pairing): admitted unless it was removed, and only under the
    /// current key if it is not a member yet. An admission or a new name takes effect at once
    /// and is saved within ``Configuration/saveDelay`` (``onTick(now:reachable:)``).
    public mutating func onMemberKey(_ key: [UInt8], name: String, from sender: PeerID, epochByte: UInt8?, now: LocalTime) -> [Directive] {
        guard let member = MemberKey(bytes: key), member.peerID == sender else { return [.refused(.notOwnKey, from: sender)] }
        if let e = epochByte, e != GroupKey.sessionEpochByte, e != UInt8(truncatingIfNeeded: group.epoch), !group.roster.isMember(sender), !group.roster.isRemoved(sender) {
            return [.refused(.memberKeyOldKey, from: sender)]
        }
        var roster = group.roster
        switch roster.admit(member, name: name) {
        case .removed: return [.refused(.removedMember, from: sender)]
        case .full: return [.refused(.rosterFull, from: sender)]
        case .unchanged: return []
        case .renamed:
            group.roster = roster
            saveLater(now: now)
            return []
        case .added:
            group.roster = roster
            refreshPairKeys()
            saveLater(now: now)
            return [.acceptPairs(pairKeys), .notice(.admitted(sender, name: name))]
        }
    }

    private mutating func saveLater(now: LocalTime) {
        if saveDue == nil { saveDue = now + configuration.saveDelay }
    }

    /// The agent could not save the group of a ``Directive/save(_:)``: it keeps what it holds in
    /// memory and tries again after ``Configuration/saveRetry``.
    public mutating func onSaveFailed(now: LocalTime) {
        saveDue = now + configuration.saveRetry
    }

    /// The agent stops: what is not saved yet is saved now.
    public mutating func onStop() -> [Directive] {
        guard saveDue != nil else { return [] }
        saveDue = nil
        return [.save(group)]
    }

    /// An `epoch_key` from `sender`, which arrived sealed pairwise if `pairwise`.
    public mutating func onEpochKey(epoch: UInt32, key: [UInt8], removed: [PeerID], from sender: PeerID, pairwise: Bool, now: LocalTime) -> [Directive] {
        guard pairwise, group.roster.isMember(sender) else { return [.refused(.epochKeyNotPairwise, from: sender)] }
        guard epoch <= Self.lastEpoch, GroupKey.isGroupEpoch(epoch), let offered = GroupKey(bytes: key, epoch: epoch) else {
            return [.refused(.invalidEpoch, from: sender)]
        }
        var out: [Directive] = []
        // Removals first: the sender knew of them; a removal naming this device is not believed
        // (a member that wants this device out cannot also be sending it the key).
        var roster = group.roster
        for id in removed where id != me.peerID && !roster.isRemoved(id) {
            if roster.remove(id) { out.append(.notice(.removed(id, by: sender))) }
        }
        let current = group.currentKey
        let wins = epoch > current.epoch || (epoch == current.epoch && offered.bytes != current.bytes && offered.keyID < current.keyID)
        var changed = roster != group.roster
        beforeInstall = group
        group.roster = roster
        refreshPairKeys()
        if wins {
            group.rotate(to: offered)
            // A full list may have left removals out: then the key is taken as covering ours too,
            // or two agents past 64 removals would make new epochs for each other without end.
            covered = removed.count >= PeerMessage.maxRemovedPerKey ? group.roster.removed : Set(removed)
            previousExpiry = now + configuration.previousKeyLife
            switchAt = nil
            delivery = nil
            changed = true
            out.append(.notice(.newEpoch(epoch, by: sender)))
        }
        var then: [Directive] = []
        if changed { then += [.accept(acceptedKeys), .acceptPairs(pairKeys), .sealWith(group.currentKey)] }
        if epoch == group.epoch && offered.bytes == group.key {
            then.append(.send(.keyAck(epoch: epoch), to: sender, pairwise: true))
        } else {
            // The sender holds a key that loses to ours: it gets ours.
            then.append(.send(epochKeyMessage(), to: sender, pairwise: true))
        }
        if changed {
            out.insert(.install(group, then: then), at: 0)
        } else {
            out = then + out
        }
        // A removal the current key was not made knowing: the key may have reached that device.
        if !group.roster.removed.isSubset(of: covered) {
            if let more = try? newEpoch(newKeyBytes: derivedKeyBytes(), immediately: true, now: now) {
                out += more
            }
        }
        return out
    }

    /// Key bytes for an epoch this agent must make while handling a message (no random source in
    /// a pure instance; ``onRemove`` and ``onRotate`` take bytes the agent drew): derived from
    /// the current key, which the devices to exclude may hold, keyed by this device's private
    /// key, which they do not.
    private func derivedKeyBytes() -> [UInt8] {
        var data = Array("lockstep epoch key v1".utf8) + group.key
        for id in group.roster.removed.sorted() { data += id.bytes }
        return Array(HMAC<SHA256>.authenticationCode(for: data, using: SymmetricKey(data: me.rawRepresentation)))
    }

    /// `sender` installed the key of `epoch`.
    public mutating func onKeyAck(epoch: UInt32, from sender: PeerID) {
        guard var d = delivery, d.epoch == epoch else { return }
        d.awaiting.remove(sender)
        delivery = d
    }

    /// An authenticated datagram from `sender` sealed under the key of epoch byte `epochByte`:
    /// false if the sender was removed (the message is then dropped, counted). A member still
    /// sealing under the previous key is sent the current one.
    public mutating func onDatagram(from sender: PeerID, source: Endpoint, epochByte: UInt8, now: LocalTime) -> (accepted: Bool, directives: [Directive]) {
        if group.roster.isRemoved(sender) { return (false, [.refused(.removedMember, from: sender)]) }
        // Pairwise and session-sealed datagrams say nothing of the sender's group key (a push for
        // each spent the member's push allowance: a member back from a restart behind a removal
        // then waited a second for the new key, and met only the removed devices meanwhile).
        guard group.roster.isMember(sender), epochByte != GroupKey.pairEpochByte, epochByte != GroupKey.sessionEpochByte,
              epochByte != UInt8(truncatingIfNeeded: group.epoch), switchAt == nil else { return (true, []) }
        return (true, push(to: sender, source: source, now: now))
    }

    /// A datagram `sender`'s header names, that no key of ours opens (an older, newer or other
    /// key of the same epoch, or a session this device no longer holds): if the sender is a
    /// member, it is sent our key, pairwise. (A device that restarted holds no session: the
    /// members' first datagrams to it are sealed under one, and a member with a newer key
    /// answers ours with its own, so a device that was away during a removal catches up at once.)
    public mutating func onUndecryptable(from sender: PeerID, epochByte: UInt8, source: Endpoint, now: LocalTime) -> [Directive] {
        guard epochByte != GroupKey.pairEpochByte, group.roster.isMember(sender), sender != me.peerID else { return [] }
        return push(to: sender, source: source, now: now)
    }

    private mutating func push(to sender: PeerID, source: Endpoint, now: LocalTime) -> [Directive] {
        if let last = pushed[sender], now - last < configuration.pushInterval { return [] }
        pushed[sender] = now
        return [.sendPairwise(epochKeyMessage(), to: source, peer: sender)]
    }

    /// Time passes: admissions and names saved once their delay is over, `epoch_key`s sent again
    /// to members that have not acknowledged them, sealing under a rotated key after its grace,
    /// the previous key forgotten after its life, and this device's key announced to `reachable`
    /// peers it has not told lately.
    public mutating func onTick(now: LocalTime, reachable: [PeerID]) -> [Directive] {
        var out: [Directive] = []
        if let due = saveDue, now >= due {
            saveDue = nil
            out.append(.save(group))
        }
        if var d = delivery {
            if d.epoch != group.epoch || d.awaiting.isEmpty || d.retries >= configuration.maxRetries {
                delivery = nil
            } else if now >= d.nextRetry {
                d.retries += 1
                d.nextRetry = now + configuration.retryInterval
                let reachableSet = Set(reachable)
                let update = epochKeyMessage()
                out += d.awaiting.sorted().filter { reachableSet.contains($0) }.map { .send(update, to: $0, pairwise: true) }
                delivery = d
            }
        }
        if let at = switchAt, now >= at {
            switchAt = nil
            out.append(.sealWith(group.currentKey))
        }
        if let at = previousExpiry, now >= at {
            previousExpiry = nil
            if let old = group.previousEpoch {
                beforeInstall = group
                group.forgetPrevious()
                out += [.install(group, then: [.accept(acceptedKeys)]), .notice(.previousKeyForgotten(old))]
            }
        }
        let announce = PeerMessage.memberKey(key: me.member.bytes, name: group.roster.member(me.peerID)?.name ?? "")
        for peer in reachable where peer != me.peerID {
            if let last = announced[peer], now - last < configuration.announceInterval { continue }
            announced[peer] = now
            out.append(.send(announce, to: peer, pairwise: false))
        }
        if announced.count > 2 * Roster.maxMembers {
            let keep = Set(reachable)
            announced = announced.filter { keep.contains($0.key) }
        }
        if pushed.count > 2 * Roster.maxMembers {
            pushed = pushed.filter { now - $0.value < configuration.pushInterval }
        }
        return out
    }

    /// The shell held back a ``Directive/send(_:to:pairwise:)`` to `peer` (its address has not
    /// shown yet that it is the peer's: the anti-amplification budget). An announcement of this
    /// device's key is due again at the next tick rather than in ``Configuration/announceInterval``;
    /// `epoch_key`s are sent again by their own retries.
    public mutating func onHeldBack(_ message: PeerMessage, to peer: PeerID) {
        if case .memberKey = message { announced[peer] = nil }
    }

    /// When ``onTick(now:reachable:)`` next has work (besides announcements, which ride on the
    /// node's own ticks), if ever.
    public var nextDeadline: LocalTime? {
        var deadlines: [LocalTime] = []
        if let d = delivery, !d.awaiting.isEmpty, d.retries < configuration.maxRetries { deadlines.append(d.nextRetry) }
        if let s = switchAt { deadlines.append(s) }
        if let p = previousExpiry { deadlines.append(p) }
        if let s = saveDue { deadlines.append(s) }
        return deadlines.min()
    }
}
