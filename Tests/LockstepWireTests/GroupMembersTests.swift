import LockstepCore
import LockstepPeerWire
import Testing

/// ``GroupMembers`` driven by its inputs alone, with a manual clock: admission, removal,
/// epochs, and convergence of epochs made on both sides of a partition.
@Suite("Group members and keys")
struct GroupMembersTests {
    static let ep = Endpoint(host: "10.0.0.9", port: 7000)!
    /// A few devices' instances, and the pairwise or group-sealed messages between them.
    struct Net {
        var agents: [PeerID: GroupMembers] = [:]
        var devices: [String: DeviceIdentity] = [:]
        var now = LocalTime(ns: 1_000_000_000)
        /// Who can hear whom (a partition cuts links); all by default.
        var cut: Set<[PeerID]> = []
        /// Every message sent: (from, to, message, pairwise).
        var sent: [(PeerID, PeerID, PeerMessage, Bool)] = []
        var seed: UInt8 = 0

        init(_ names: [String]) {
            let code = GroupIdentity(name: "home", key: GroupKey(bytes: Array(repeating: 5, count: 32), epoch: 1)!)
            for (i, n) in names.enumerated() {
                devices[n] = DeviceIdentity(rawRepresentation: Array(repeating: UInt8(i + 1), count: 32))!
                var a = GroupMembers(group: code, me: devices[n]!)
                _ = a.onStart(name: n, now: now)
                agents[devices[n]!.peerID] = a
            }
            // Everyone announces its key to everyone (as onTick does for reachable peers).
            for a in agents.keys { deliver(from: a, agents[a]!.onTickAll(now: now, reachable: Array(agents.keys))) }
        }

        func id(_ name: String) -> PeerID { devices[name]!.peerID }
        subscript(_ name: String) -> GroupMembers { agents[id(name)]! }

        func linked(_ a: PeerID, _ b: PeerID) -> Bool { !cut.contains([a, b]) && !cut.contains([b, a]) }

        mutating func partition(_ left: [String], _ right: [String]) {
            for l in left { for r in right { cut.insert([id(l), id(r)]) } }
        }

        mutating func heal() { cut = [] }

        mutating func nextKey() -> [UInt8] {
            seed &+= 1
            return Array(repeating: seed, count: 32)
        }

        /// Carries out directives of `from`: messages reach their (linked) destination at once.
        mutating func deliver(from: PeerID, _ directives: [GroupMembers.Directive]) {
            for d in directives {
                switch d {
                case .install(_, let then): deliver(from: from, then)
                case .send(let m, let to, let pairwise):
                    sent.append((from, to, m, pairwise))
                    guard linked(from, to), agents[to] != nil else { continue }
                    receive(m, from: from, at: to, pairwise: pairwise)
                case .sendPairwise(let m, _, let to):
                    sent.append((from, to, m, true))
                    guard linked(from, to), agents[to] != nil else { continue }
                    receive(m, from: from, at: to, pairwise: true)
                default: break
                }
            }
        }

        mutating func receive(_ m: PeerMessage, from: PeerID, at to: PeerID, pairwise: Bool) {
            // A pairwise datagram opens only if the receiver holds a pair key for the sender.
            if pairwise && agents[to]!.pairKeys[from] == nil { return }
            switch m {
            case .epochKey(let epoch, let key, let removed):
                let out = agents[to]!.onEpochKey(epoch: epoch, key: key, removed: removed, from: from, pairwise: pairwise, now: now)
                deliver(from: to, out)
            case .keyAck(let epoch):
                agents[to]!.onKeyAck(epoch: epoch, from: from)
            case .memberKey(let key, let name):
                let sealedWith = UInt8(truncatingIfNeeded: agents[from]!.group.epoch)
                deliver(from: to, agents[to]!.onMemberKey(key, name: name, from: from, epochByte: sealedWith, now: now))
            default: break
            }
        }

        mutating func tick(_ by: TimeSpan) {
            now = now + by
            for a in agents.keys.sorted() {
                let reachable = agents.keys.filter { linked(a, $0) && $0 != a }
                var inst = agents[a]!
                let out = inst.onTick(now: now, reachable: reachable)
                agents[a] = inst
                deliver(from: a, out)
            }
        }
    }

    @Test("an announcement held back (its address not validated yet) is due again at the next tick, not in 30 s")
    func heldBackAnnouncement() {
        let code = GroupIdentity(name: "home", key: GroupKey(bytes: Array(repeating: 5, count: 32), epoch: 1)!)
        let me = DeviceIdentity(rawRepresentation: Array(repeating: 1, count: 32))!
        let peer = DeviceIdentity(rawRepresentation: Array(repeating: 2, count: 32))!.peerID
        var a = GroupMembers(group: code, me: me)
        let t0 = LocalTime(ns: 1_000_000_000)
        _ = a.onStart(name: "a", now: t0)
        func announcements(_ d: [GroupMembers.Directive]) -> Int {
            d.count { if case .send(.memberKey, peer, false) = $0 { true } else { false } }
        }
        let first = a.onTick(now: t0, reachable: [peer])
        #expect(announcements(first) == 1)
        #expect(announcements(a.onTick(now: t0 + .milliseconds(30), reachable: [peer])) == 0)
        guard case .send(let m, _, _)? = first.first(where: { if case .send(.memberKey, _, _) = $0 { true } else { false } }) else { return }
        a.onHeldBack(m, to: peer)
        #expect(announcements(a.onTick(now: t0 + .milliseconds(60), reachable: [peer])) == 1)
    }

    @Test("every holder of the group key is admitted by every other when it announces its device key")
    func admission() {
        let net = Net(["a", "b", "c"])
        for n in ["a", "b", "c"] {
            #expect(Set(net[n].roster.members.keys) == Set([net.id("a"), net.id("b"), net.id("c")]))
            #expect(net[n].roster.member(net.id("b"))?.name == "b")
        }
    }

    @Test("a member_key whose key is not its sender's is refused (a peer id derives from its key)")
    func foreignKeyRefused() {
        var net = Net(["a", "b"])
        let intruder = DeviceIdentity(rawRepresentation: Array(repeating: 99, count: 32))!
        var a = net[ "a"]
        let out = a.onMemberKey(intruder.member.bytes, name: "fake b", from: net.id("b"), epochByte: 1, now: net.now)
        #expect(out == [.refused(.notOwnKey, from: net.id("b"))])
        #expect(a.roster.member(net.id("b"))?.name == "b")
        net.agents[net.id("a")] = a
    }

    @Test("after a new epoch, a device that is not a member and announces itself under the older key (an old join code) is refused; a member away is not")
    func oldJoinCodeAdmitsNobody() throws {
        var net = Net(["a", "b"])
        var a = net["a"]
        _ = try a.onRotate(newKeyBytes: net.nextKey(), now: net.now)
        let newcomer = DeviceIdentity(rawRepresentation: Array(repeating: 42, count: 32))!
        #expect(a.onMemberKey(newcomer.member.bytes, name: "late", from: newcomer.peerID, epochByte: 1, now: net.now) == [.refused(.memberKeyOldKey, from: newcomer.peerID)])
        #expect(!a.roster.isMember(newcomer.peerID))
        #expect(a.onMemberKey(net.devices["b"]!.member.bytes, name: "b", from: net.id("b"), epochByte: 1, now: net.now).isEmpty)
        let current = UInt8(truncatingIfNeeded: a.group.epoch)
        #expect(a.onMemberKey(newcomer.member.bytes, name: "late", from: newcomer.peerID, epochByte: current, now: net.now).contains(.notice(.admitted(newcomer.peerID, name: "late"))))
        net.agents[net.id("a")] = a
    }

    @Test("admissions take effect at once and are saved together once the save delay is over; a failed save is tried again later; stopping saves what is pending")
    func admissionsSavedTogether() {
        let code = GroupIdentity(name: "home", key: GroupKey(bytes: Array(repeating: 5, count: 32), epoch: 1)!)
        var a = GroupMembers(group: code, me: DeviceIdentity(rawRepresentation: Array(repeating: 1, count: 32))!)
        let t0 = LocalTime(ns: 1_000_000_000)
        _ = a.onStart(name: "a", now: t0)
        #expect(a.nextDeadline == nil)
        func saves(_ d: [GroupMembers.Directive]) -> [GroupIdentity] {
            d.compactMap { if case .save(let g) = $0 { g } else { nil } }
        }
        let others = (2...4).map { DeviceIdentity(rawRepresentation: Array(repeating: UInt8($0), count: 32))! }
        for (i, o) in others.enumerated() {
            let out = a.onMemberKey(o.member.bytes, name: "m\(i)", from: o.peerID, epochByte: 1, now: t0 + .milliseconds(Int64(100 * i)))
            // In effect at once: its pair key is accepted, nothing waits for the disk.
            #expect(out.contains(.acceptPairs(a.pairKeys)))
            #expect(!out.contains { if case .install = $0 { true } else { false } })
            #expect(a.roster.isMember(o.peerID))
        }
        let due = t0 + a.configuration.saveDelay
        #expect(a.nextDeadline == due)
        #expect(saves(a.onTick(now: due - .milliseconds(1), reachable: [])).isEmpty)
        let first = saves(a.onTick(now: due, reachable: []))
        #expect(first.count == 1)
        #expect(Set(first.first?.roster.members.keys ?? [:].keys) == Set(others.map(\.peerID) + [a.me.peerID]))
        #expect(saves(a.onTick(now: due + .seconds(5), reachable: [])).isEmpty)
        #expect(a.nextDeadline == nil)

        // A new name, a save that fails: tried again after the retry, not at every tick.
        let t1 = due + .seconds(10)
        _ = a.onMemberKey(others[0].member.bytes, name: "renamed", from: others[0].peerID, epochByte: 1, now: t1)
        #expect(a.roster.member(others[0].peerID)?.name == "renamed")
        let renamed = t1 + a.configuration.saveDelay
        #expect(saves(a.onTick(now: renamed, reachable: [])).first?.roster.member(others[0].peerID)?.name == "renamed")
        a.onSaveFailed(now: renamed)
        #expect(saves(a.onTick(now: renamed + a.configuration.saveDelay, reachable: [])).isEmpty)
        #expect(saves(a.onTick(now: renamed + a.configuration.saveRetry, reachable: [])).count == 1)

        // Stopping saves what is pending, and only then.
        #expect(saves(a.onStop()).isEmpty)
        let late = DeviceIdentity(rawRepresentation: Array(repeating: 9, count: 32))!
        _ = a.onMemberKey(late.member.bytes, name: "late", from: late.peerID, epochByte: 1, now: t1 + .seconds(30))
        #expect(saves(a.onStop()).first?.roster.isMember(late.peerID) == true)
        #expect(a.nextDeadline == nil)
    }

    @Test("a pair key is the same on both sides and different for every pair")
    func pairKeys() {
        let net = Net(["a", "b", "c"])
        let ab = net["a"].pairKeys[net.id("b")]
        #expect(ab != nil)
        #expect(ab == net["b"].pairKeys[net.id("a")])
        #expect(ab != net["a"].pairKeys[net.id("c")])
        #expect(ab?.epoch == GroupKey.pairEpoch)
    }

    @Test("removing a device: a new epoch, its key sent pairwise to every other member and never to the removed one, sealed under at once")
    func removal() throws {
        var net = Net(["a", "b", "c", "r"])
        var a = net["a"]
        let out = try a.onRemove(net.id("r"), newKeyBytes: net.nextKey(), now: net.now)
        net.agents[net.id("a")] = a
        net.sent = []
        net.deliver(from: net.id("a"), out)
        let keyMessages = net.sent.filter { if case .epochKey = $0.2 { return true } else { return false } }
        #expect(Set(keyMessages.map(\.1)) == Set([net.id("b"), net.id("c")]))
        #expect(keyMessages.allSatisfy { $0.3 })
        guard case .install(_, let then) = out.first(where: { if case .install = $0 { true } else { false } }) else {
            Issue.record("no install")
            return
        }
        #expect(then.contains(.sealWith(net["a"].group.currentKey)))
        for n in ["a", "b", "c"] {
            #expect(net[n].group.epoch == 2)
            #expect(net[n].group.key == net["a"].group.key)
            #expect(net[n].isRemoved(net.id("r")))
            #expect(net[n].pairKeys[net.id("r")] == nil)
        }
        #expect(net["r"].group.epoch == 1)
        // The removed device's datagrams are refused, and its key announcements too.
        var b = net["b"]
        #expect(b.onDatagram(from: net.id("r"), source: Self.ep, epochByte: 1, now: net.now).accepted == false)
        #expect(b.onMemberKey(net.devices["r"]!.member.bytes, name: "r", from: net.id("r"), epochByte: 1, now: net.now) == [.refused(.removedMember, from: net.id("r"))])
        // Acknowledged by b and c: nothing left to resend.
        #expect(net["a"].unacknowledged == 0)
    }

    @Test("an epoch_key not sealed pairwise, or from a device that is not a member, is refused")
    func epochKeyMustBePairwise() {
        var net = Net(["a", "b"])
        var b = net["b"]
        let k = net.nextKey()
        #expect(b.onEpochKey(epoch: 2, key: k, removed: [], from: net.id("a"), pairwise: false, now: net.now) == [.refused(.epochKeyNotPairwise, from: net.id("a"))])
        let stranger = PeerID(high: 1, low: 1)
        #expect(b.onEpochKey(epoch: 2, key: k, removed: [], from: stranger, pairwise: true, now: net.now) == [.refused(.epochKeyNotPairwise, from: stranger)])
        #expect(b.onEpochKey(epoch: .max, key: k, removed: [], from: net.id("a"), pairwise: true, now: net.now) == [.refused(.invalidEpoch, from: net.id("a"))])
        #expect(b.group.epoch == 1)
        // A rotation still works after those.
        #expect((try? b.onRotate(newKeyBytes: k, now: net.now)) != nil)
        #expect(b.group.epoch == 2)
        net.agents[net.id("b")] = b
    }

    @Test("a key whose list of removals is full is taken as covering them: no new epoch in answer, so two agents past 64 removals do not rekey for each other without end")
    func fullRemovalListEndsRekeying() {
        var net = Net(["a", "b"])
        var b = net["b"]
        let many = (1...70).map { PeerID(high: 0xdead, low: UInt64($0)) }
        // b learns the last 6 removals first, then a key listing the other 64 (a full list).
        _ = b.onEpochKey(epoch: 2, key: net.nextKey(), removed: Array(many.suffix(6)), from: net.id("a"), pairwise: true, now: net.now)
        let out = b.onEpochKey(epoch: 3, key: net.nextKey(), removed: Array(many.prefix(PeerMessage.maxRemovedPerKey)), from: net.id("a"), pairwise: true, now: net.now)
        #expect(b.roster.removed.count == 70)
        #expect(b.group.epoch == 3)
        #expect(!out.contains { if case .notice(.newEpoch(_, by: let by)) = $0 { by == net.id("b") } else { false } })
        net.agents[net.id("b")] = b
    }

    @Test("an epoch_key that lists this device as removed does not remove it")
    func cannotBeToldItIsRemoved() {
        var net = Net(["a", "b"])
        var b = net["b"]
        _ = b.onEpochKey(epoch: 2, key: net.nextKey(), removed: [net.id("b")], from: net.id("a"), pairwise: true, now: net.now)
        #expect(!b.isRemoved(net.id("b")))
        #expect(b.group.epoch == 2)
    }

    @Test("removals made at once on both sides of a partition converge to one key that neither removed device was sent")
    func concurrentRemovalsConverge() throws {
        var net = Net(["a", "b", "r1", "r2"])
        net.partition(["a", "r1"], ["b", "r2"])
        var a = net["a"]
        let outA = try a.onRemove(net.id("r2"), newKeyBytes: net.nextKey(), now: net.now)
        net.agents[net.id("a")] = a
        var b = net["b"]
        let outB = try b.onRemove(net.id("r1"), newKeyBytes: net.nextKey(), now: net.now)
        net.agents[net.id("b")] = b
        net.deliver(from: net.id("a"), outA)
        net.deliver(from: net.id("b"), outB)
        #expect(net["a"].group.epoch == net["b"].group.epoch)
        #expect(net["a"].group.key != net["b"].group.key)
        net.heal()
        net.sent = []
        // Each side hears the other under a key it does not hold: it sends its own.
        net.deliver(from: net.id("a"), { var x = net["a"]; let o = x.onUndecryptable(from: net.id("b"), epochByte: 2, source: Self.ep, now: net.now); net.agents[net.id("a")] = x; return o }())
        net.deliver(from: net.id("b"), { var x = net["b"]; let o = x.onUndecryptable(from: net.id("a"), epochByte: 2, source: Self.ep, now: net.now); net.agents[net.id("b")] = x; return o }())
        for _ in 0..<5 { net.tick(.milliseconds(250)) }
        #expect(net["a"].group.key == net["b"].group.key)
        #expect(net["a"].group.epoch == net["b"].group.epoch)
        #expect(net["a"].group.epoch >= 3)
        for n in ["a", "b"] {
            #expect(net[n].isRemoved(net.id("r1")) && net[n].isRemoved(net.id("r2")))
        }
        // The final key went to nobody removed.
        let final = net["a"].group.key
        let leaked = net.sent.filter { if case .epochKey(_, let k, _) = $0.2 { k == final && ($0.1 == net.id("r1") || $0.1 == net.id("r2")) } else { false } }
        #expect(leaked.isEmpty)
    }

    /// a, b and r; a removes r while b is cut off, then b is back (still at epoch 1).
    static func removalWhileAway() throws -> Net {
        var net = Net(["a", "b", "r"])
        net.partition(["b"], ["a", "r"])
        var a = net["a"]
        net.deliver(from: net.id("a"), try a.onRemove(net.id("r"), newKeyBytes: net.nextKey(), now: net.now))
        net.agents[net.id("a")] = a
        net.heal()
        return net
    }

    @Test("a member away during a removal is sent the new key when heard under the old one; the removed device is sent nothing")
    func awayMemberCatchesUp() throws {
        var net = try Self.removalWhileAway()
        #expect(net["b"].group.epoch == 1)
        net.tick(.seconds(40))  // past the previous key's life: b's datagrams no longer open at a
        net.sent = []
        var a2 = net["a"]
        let toB = a2.onUndecryptable(from: net.id("b"), epochByte: 1, source: Self.ep, now: net.now)
        let toR = a2.onUndecryptable(from: net.id("r"), epochByte: 1, source: Self.ep, now: net.now)
        net.agents[net.id("a")] = a2
        #expect(toR.isEmpty)
        net.deliver(from: net.id("a"), toB)
        #expect(net["b"].group.epoch == net["a"].group.epoch)
        #expect(net["b"].group.key == net["a"].group.key)
        #expect(net["b"].isRemoved(net.id("r")))
        // Pushes are rate-limited per member.
        var a3 = net["a"]
        #expect(a3.onUndecryptable(from: net.id("b"), epochByte: 1, source: Self.ep, now: net.now).isEmpty)
    }

    @Test("a member away during a removal, restarted, catches up from a member's session datagram it cannot open: it sends its key, the member answers with the new one")
    func restartedMemberCatchesUpFromSession() throws {
        var net = try Self.removalWhileAway()
        #expect(net["b"].group.epoch == 1)
        var b = net["b"]
        let out = b.onUndecryptable(from: net.id("a"), epochByte: GroupKey.sessionEpochByte, source: Self.ep, now: net.now)
        net.agents[net.id("b")] = b
        #expect(!out.isEmpty)
        net.deliver(from: net.id("b"), out)
        #expect(net["b"].group.epoch == net["a"].group.epoch)
        #expect(net["b"].isRemoved(net.id("r")))
    }

    @Test("a member's session-sealed datagram pushes no key (it says nothing of the sender's group key), so a push when it falls behind is not held back")
    func sessionDatagramsPushNothing() {
        let net = Net(["a", "b"])
        var a = net["a"]
        let (accepted, out) = a.onDatagram(from: net.id("b"), source: Self.ep, epochByte: GroupKey.sessionEpochByte, now: net.now)
        #expect(accepted && out.isEmpty)
        // b, heard under an older epoch right after, is sent the key at once.
        let behind = a.onDatagram(from: net.id("b"), source: Self.ep, epochByte: UInt8(truncatingIfNeeded: a.group.epoch &- 1), now: net.now)
        #expect(!behind.directives.isEmpty)
    }

    @Test("the previous key is accepted for its life after a new one is installed, then forgotten")
    func previousKeyExpires() throws {
        var net = Net(["a", "b"])
        var a = net["a"]
        _ = try a.onRotate(newKeyBytes: net.nextKey(), now: net.now)
        #expect(a.acceptedKeys.count == 2)
        let before = a.onTick(now: net.now + .seconds(29), reachable: [])
        #expect(!before.contains(.notice(.previousKeyForgotten(1))))
        let after = a.onTick(now: net.now + .seconds(31), reachable: [])
        #expect(after.contains(.notice(.previousKeyForgotten(1))))
        #expect(a.acceptedKeys.map(\.epoch) == [2])
        #expect(a.group.previousEpoch == nil)
    }

    @Test("a rotation seals under the new key only after the grace period; a removal at once")
    func graceOnlyForRotation() throws {
        var net = Net(["a", "b"])
        var a = net["a"]
        let rotated = try a.onRotate(newKeyBytes: net.nextKey(), now: net.now)
        let sealsAtOnce = rotated.contains { if case .install(_, let then) = $0 { then.contains { if case .sealWith = $0 { true } else { false } } } else { false } }
        #expect(!sealsAtOnce)
        #expect(a.onTick(now: net.now + .seconds(2), reachable: []).contains(.sealWith(a.group.currentKey)) == false)
        #expect(a.onTick(now: net.now + .seconds(3), reachable: []).contains(.sealWith(a.group.currentKey)))
    }

    @Test("epochs skip the byte of pairwise keys, and a group file or join code naming one is refused")
    func epochsSkipPairByte() {
        #expect(GroupKey.nextEpoch(after: 0xFD) == 0x100)
        #expect(GroupKey.nextEpoch(after: 0x1FD) == 0x200)
        #expect(GroupKey.nextEpoch(after: UInt32.max - 3) == nil)
        let g = GroupIdentity(name: "x", key: GroupKey(bytes: Array(repeating: 1, count: 32), epoch: 0xFF)!)
        #expect(throws: JoinCode.ParseError.notAJoinCode) { _ = try JoinCode.parse(JoinCode.make(g), name: "x") }
    }
}

extension GroupMembers {
    /// onTick for tests that only want the announcements (the instance is a copy).
    func onTickAll(now: LocalTime, reachable: [PeerID]) -> [Directive] {
        var copy = self
        return copy.onTick(now: now, reachable: reachable)
    }
}
