import Foundation
import LockstepLab
import LockstepPeerWire
import LockstepPlayerProtocol
import Testing

/// Pairing a device into a group with a short code, on real hosts with real avahi-daemons.
/// (Removal is a fault scenario: ``FaultLabTests/removeDevice()``.)
@Suite("Lab: members", .enabled(if: Lab.isEnabled, "needs root and LOCKSTEP_LAB=1"), .serialized)
struct MembersLabTests {
    @Test("a device of another group pairs with an 8-digit code found over DNS-SD: a wrong code gets nothing, the right one joins it, and every member admits it")
    func pairWithCode() async throws {
        let lab = try Lab(hosts: 3, name: "pair")
        defer { lab.destroy() }
        try lab.startAgent(1)
        try lab.startAgent(2)
        let elsewhere = JoinCode.make(GroupIdentity(name: "elsewhere", key: .random()))
        try lab.startAgent(3, environment: ["LOCKSTEP_JOIN_CODE": elsewhere])
        #expect(try await waitUntil(timeout: 15) { try await lab.allReachable(among: [1, 2]) } != nil)

        let invite: GroupInviteResult = try await lab.request(1, "group_invite", GroupInviteRequest(uses: 1))
        #expect(invite.code.count == 9 && invite.code.contains("-"))
        let digits = invite.code.filter(\.isNumber)
        let wrong = String(digits.dropLast()) + (digits.last == "0" ? "1" : "0")
        // DNS-SD must carry the open invite to h3 first; a wrong code is then refused by h1.
        var wrongAnswer = ""
        _ = await waitUntil(timeout: 10, interval: 0.5) {
            do {
                let _: GroupShowResult = try await lab.request(3, "group_join", GroupRequest(code: wrong))
                wrongAnswer = "joined with a wrong code"
                return true
            } catch {
                wrongAnswer = "\(error)"
                return !wrongAnswer.contains("no device is inviting")
            }
        }
        #expect(wrongAnswer.contains("matches no inviting device"), "\(wrongAnswer)")
        let h3: AgentStatus = try await lab.request(3, "status")
        let h1: AgentStatus = try await lab.request(1, "status")
        #expect(h3.group.tag != h1.group.tag)

        let joined: GroupShowResult = try await lab.request(3, "group_join", GroupRequest(code: invite.code))
        #expect(joined.tag == h1.group.tag)
        #expect(try await waitUntil(timeout: 10) { try await lab.allReachable(among: [1, 2, 3]) } != nil)
        let admitted = try await waitUntil(timeout: 5, interval: 0.1) {
            let m1: GroupMembersResult = try await lab.request(1, "group_members")
            let m2: GroupMembersResult = try await lab.request(2, "group_members")
            return m1.members.contains { $0.name == "h3" } && m2.members.contains { $0.name == "h3" }
        }
        #expect(admitted != nil, "h3 is not on every member's list")
        let me3: GroupMembersResult = try await lab.request(3, "group_members")
        let seenBy1: GroupMembersResult = try await lab.request(1, "group_members")
        #expect(me3.members.first { $0.thisDevice }?.fingerprint == seenBy1.members.first { $0.name == "h3" }?.fingerprint)
    }
}
