import Foundation
import LockstepClient
import LockstepPlayerProtocol

extension Faults {
    /// Removing devices from a playing group (issue 16): h3 removed while it is up, h4 while it
    /// is down, h5 away during both and back afterwards. h1 and h2 play throughout.
    public static func removeDevice(hosts: Int = 5) async throws -> FaultOutcome {
        var o = FaultOutcome(fault: "remove a device while it is up and one while it is down; a member away meanwhile comes back")
        let g = try await PlayingGroup(hosts: hosts, name: "fremove")
        defer { g.destroy() }
        let started = MonotonicClock.read()
        let admitted = try await waitUntil(timeout: 10, interval: 0.1) {
            let m: GroupMembersResult = try await g.lab.request(1, "group_members")
            return m.members.count == hosts
        }
        o.check("every device is a member (each announced its device key)", admitted != nil, admitted.map { String(format: "all %d after %.1f s", hosts, $0) } ?? "not all admitted")
        let before: GroupMembersResult = try await g.lab.request(1, "group_members")
        func fingerprint(_ h: Int) -> String { before.members.first { $0.name == "h\(h)" }?.fingerprint ?? "h\(h)" }

        // h5 goes away; h4 goes down; h3 stays up.
        for h in [4, 5] {
            try g.lab.kill(h, "player", signal: "KILL")
            try g.lab.kill(h, "agent", signal: "KILL")
        }
        let afterUp: GroupMembersResult = try await g.lab.request(1, "group_remove", GroupRemoveRequest(device: fingerprint(3)))
        let afterDown: GroupMembersResult = try await g.lab.request(1, "group_remove", GroupRemoveRequest(device: fingerprint(4)))
        o.figures["epoch_after"] = Double(afterDown.epoch)
        let names = Set(afterDown.members.map(\.name))
        o.check("h3 and h4 are gone from the member list", !names.contains("h3") && !names.contains("h4") && afterUp.epoch < afterDown.epoch, "members \(names.sorted()), epochs \(before.epoch) → \(afterUp.epoch) → \(afterDown.epoch)")
        let h2Epoch = await waitUntil(timeout: 5, interval: 0.05) {
            let s: AgentStatus? = try? await g.lab.request(2, "status")
            return s?.group.epoch == afterDown.epoch
        }
        o.figures["h2_new_key_s"] = h2Epoch ?? -1
        o.check("h2 holds the new key", h2Epoch != nil, h2Epoch.map { String(format: "%.3f s after the removal", $0) } ?? "never")

        // h4 and h5 come back with their old state.
        for h in [4, 5] {
            try g.lab.startAgent(h)
            try g.startPlayer(h)
        }
        let back = await waitUntil(timeout: 10, interval: 0.1) {
            let s: AgentStatus? = try? await g.lab.request(5, "status")
            return s?.group.epoch == afterDown.epoch
        }
        o.figures["away_member_new_key_s"] = back ?? -1
        o.check("h5, away during the removals, gets the new key when it comes back", back != nil, back.map { String(format: "%.2f s after its restart", $0) } ?? "never")
        let h5Members: GroupMembersResult = try await g.lab.request(5, "group_members")
        o.check("h5 learns of both removals", Set(h5Members.removed).isSuperset(of: [fingerprint(3), fingerprint(4)]), "h5's removed: \(h5Members.removed)")

        // The removed devices try: h3 commands a pause, both keep sending under the old key.
        let _: GroupStateView? = try? await g.lab.request(3, "command", CommandRequest(action: .pause))
        try await Task.sleep(nanoseconds: 6_000_000_000)
        var removedEpochs: [UInt32] = []
        for h in [3, 4] {
            let s: AgentStatus = try await g.lab.request(h, "status")
            removedEpochs.append(s.group.epoch)
        }
        o.check("neither removed device ever held a newer key", removedEpochs.allSatisfy { $0 == before.epoch }, "h3 epoch \(removedEpochs[0]), h4 epoch \(removedEpochs[1]), the group's \(afterDown.epoch)")
        let h3: AgentStatus = try await g.lab.request(3, "status")
        let h3Peers: PeersResult = try await g.lab.request(3, "peers")
        let hears = h3Peers.peers.filter { ["h1", "h2", "h5"].contains($0.name) && $0.state == "reachable" }.map(\.name)
        let unreadable = h3.counters["dropped_unknown_key_epoch"] ?? 0
        o.figures["h3_unreadable_datagrams"] = Double(unreadable)
        o.check("h3 reads nothing of the group's traffic (every datagram dropped as an unknown key)", unreadable > 0 && hears.isEmpty, "\(unreadable) dropped; members h3 still reaches: \(hears)")
        var refused: UInt64 = 0
        for h in [1, 2] {
            let s: AgentStatus = try await g.lab.request(h, "status")
            refused += (s.counters["dropped_removed_member"] ?? 0) + (s.counters["dropped_unknown_key_epoch"] ?? 0)
        }
        o.figures["refused_from_removed"] = Double(refused)
        let state: GroupStateView = try await g.lab.request(1, "state")
        o.check("what they send is refused and counted; h3's pause reached nobody", refused > 0 && state.item?.state == .playing, "\(refused) datagrams refused at h1 and h2, group \(state.item?.state.rawValue ?? "empty")")

        // h1, h2 (and h5, back) in step.
        let now = MonotonicClock.read() - 200_000_000
        let throughout = try g.spreads([1, 2], from: started, to: now)
        o.figures["remaining_spread_p99_us"] = throughout.percentile(99)
        o.check("h1 and h2 play in step throughout", throughout.percentile(99) < 1000, "spread p99 \(us(throughout.percentile(99))) from before the removals to now")
        let rejoined = try g.spreads([1, 2, 5], from: now - 2_000_000_000, to: now)
        o.figures["with_h5_spread_p99_us"] = rejoined.percentile(99)
        o.check("h5 plays in step with them again", rejoined.percentile(99) < 1000, "spread p99 \(us(rejoined.percentile(99))) over the last 2 s")
        return o
    }

    /// Two devices started from one copied state directory (one SD image on two boards): both
    /// must notice and say so, and their datagrams never share keys.
    public static func clonedDevice() async throws -> FaultOutcome {
        var o = FaultOutcome(fault: "a device's state directory copied to another device, both started")
        let lab = try Lab(hosts: 3, name: "fclone")
        defer { lab.destroy() }
        for h in 1...2 { try lab.startAgent(h) }
        _ = try await waitUntil(timeout: 15) { try await lab.allReachable(among: [1, 2]) }
        let before: AgentStatus = try await lab.request(2, "status")
        try lab.kill(2)
        try await Task.sleep(nanoseconds: 500_000_000)
        _ = try lab.exec(3, ["sh", "-c", "rm -rf \(lab.hostDirectory(3))/state && cp -a \(lab.hostDirectory(2))/state \(lab.hostDirectory(3))/state"])
        try lab.startAgent(2)
        try lab.startAgent(3)
        var statuses: [AgentStatus] = []
        let noticed = await waitUntil(timeout: 10, interval: 0.1) {
            statuses = []
            for h in [2, 3] { if let s: AgentStatus = try? await lab.request(h, "status") { statuses.append(s) } }
            return statuses.count == 2 && statuses.allSatisfy { ($0.counters["dropped_clone"] ?? 0) > 0 }
        }
        o.figures["noticed_s"] = noticed ?? -1
        o.check("both copies say another device uses their key", noticed != nil, noticed.map { String(format: "both within %.1f s of starting", $0) } ?? "counters: \(statuses.map { $0.counters["dropped_clone"] ?? 0 })")
        o.check("they share the peer id (the copied key), as expected", statuses.count == 2 && statuses.allSatisfy { $0.peerID == before.peerID }, statuses.map(\.peerID).joined(separator: ", "))
        let distinct = statuses.count == 2 && statuses[0].incarnation != statuses[1].incarnation
        o.check("their incarnations differ, so no datagram key is shared", distinct, statuses.map { String($0.incarnation) }.joined(separator: " vs "))
        return o
    }
}
