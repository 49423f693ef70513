import Foundation
import LockstepCore
import LockstepTestKit
import Testing

@testable import LockstepAgent

/// Review finding M9: switching groups drops the old group's replicated state, so nothing of it
/// (item URLs, titles, who issued what) reaches the new group's peers.
@Suite("Group switch")
struct GroupSwitchTests {
    @Test("after joining another group the agent holds nothing of the old group's items or players' records")
    func switchDropsState() async throws {
        try await withTemporaryDirectory { dir in
            let h = try AgentLogicTests.Harness(dir: dir)
            let (client, lines) = await h.connect()
            var it = lines
            await h.send(#"{"type":"hello","request_id":1,"protocol":1,"role":"player","name":"tv"}"#, from: client)
            _ = await AgentLogicTests.next(&it)
            await h.send(#"{"type":"command","request_id":2,"action":"load","item":"https://example.com/private?token=s3cret"}"#, from: client)
            #expect(await !h.agent.node.group.state.items.isEmpty)
            await h.send(#"{"type":"group_create","request_id":3,"name":"bedroom"}"#, from: client)
            let items = await h.agent.node.group.state.items
            #expect(items.isEmpty, "the old group's items are gone: \(items.keys)")
            #expect(await h.agent.node.group.state.current == nil)
            // The player is still known to the new node (its own participant record lists it).
            let me = await h.agent.identity.peerID
            #expect(await h.agent.node.group.participants[me]?.players.count == 1)
        }
    }
}
