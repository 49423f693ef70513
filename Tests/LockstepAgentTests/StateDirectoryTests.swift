import Foundation
import LockstepCore
import LockstepPeerWire
import LockstepTestKit
import Testing

@testable import LockstepAgent

@Suite("State directory")
struct StateDirectoryTests {
    @Test("the device key is created once, mode 0600, the same on every later start, and the peer id derives from it")
    func identityPersists() async throws {
        try await withTemporaryDirectory { dir in
            let state = StateDirectory(path: dir + "/state")
            try state.prepare()
            let first = try state.deviceIdentity()
            let again = try StateDirectory(path: dir + "/state").deviceIdentity()
            #expect(first.identity.peerID == again.identity.peerID)
            #expect(first.identity.rawRepresentation == again.identity.rawRepresentation)
            #expect(first.replaced == nil)
            #expect(first.identity.peerID == first.identity.member.peerID)
            var st = stat()
            #expect(stat(dir + "/state/identity", &st) == 0)
            #expect(st.st_mode & 0o777 == 0o600)
        }
    }

    @Test("a Lockstep 1 state directory (a random peer-id) gets a device key, says which id it replaced, and drops the old file")
    func migratesPeerID() async throws {
        try await withTemporaryDirectory { dir in
            let state = StateDirectory(path: dir)
            try state.prepare()
            let old = PeerID.random()
            try (old.hex + "\n").write(toFile: dir + "/peer-id", atomically: true, encoding: .utf8)
            let (identity, replaced) = try state.deviceIdentity()
            #expect(replaced == old)
            #expect(identity.peerID != old)
            #expect(!FileManager.default.fileExists(atPath: dir + "/peer-id"))
            #expect(try state.deviceIdentity().replaced == nil)
        }
    }

    @Test("a corrupt identity file is an error that names the file and the way out, not a new identity")
    func corruptIdentity() async throws {
        try await withTemporaryDirectory { dir in
            let state = StateDirectory(path: dir)
            try state.prepare()
            try "not a key\n".write(toFile: dir + "/identity", atomically: true, encoding: .utf8)
            #expect { try state.deviceIdentity() } throws: {
                let text = ($0 as? StateDirectory.Failure)?.description ?? ""
                return text.contains(dir + "/identity") && text.contains("remove it")
            }
        }
    }

    @Test("the name defaults to the hostname; an override is kept for the next start")
    func namePersists() async throws {
        try await withTemporaryDirectory { dir in
            let state = StateDirectory(path: dir)
            try state.prepare()
            let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? ""
            #expect(try state.name(override: nil) == host)
            #expect(try state.name(override: "living-room") == "living-room")
            #expect(try state.name(override: nil) == "living-room")
        }
    }

    @Test("each start takes a larger incarnation, even if the wall clock went back")
    func incarnationsGrow() async throws {
        try await withTemporaryDirectory { dir in
            let state = StateDirectory(path: dir)
            try state.prepare()
            let block = StateDirectory.incarnationBlock
            let a = try state.nextIncarnation(wallClockMicros: 100 * block + 5, random: 7)
            let b = try state.nextIncarnation(wallClockMicros: 50 * block, random: 3)
            let c = try state.nextIncarnation(wallClockMicros: 900 * block + 1, random: block - 1)
            #expect(a == 100 * block + 7)
            #expect(b == 101 * block + 3)
            #expect(c == 900 * block + block - 1)
            #expect(a < b && b < c)
        }
    }

    @Test("two devices started from one copied state directory with the clock set back take different incarnations, so their datagram keys differ")
    func clonedStateDirectories() async throws {
        try await withTemporaryDirectory { dir in
            let original = StateDirectory(path: dir + "/a")
            try original.prepare()
            _ = try original.nextIncarnation(wallClockMicros: 1_000 * StateDirectory.incarnationBlock)
            _ = try original.deviceIdentity()
            try FileManager.default.copyItem(atPath: dir + "/a", toPath: dir + "/b")
            let clone = StateDirectory(path: dir + "/b")
            // Both clocks are behind the stored incarnation (no real-time clock): only the random bits differ.
            let one = try original.nextIncarnation(wallClockMicros: 10, random: 0x12_3456)
            let two = try clone.nextIncarnation(wallClockMicros: 10, random: 0xab_cdef)
            #expect(one != two)
            #expect(try original.deviceIdentity().identity.peerID == (try clone.deviceIdentity().identity.peerID))
            let key = GroupKey(bytes: Array(repeating: 3, count: 32), epoch: 1)!
            let id = try original.deviceIdentity().identity.peerID
            let first = EnvelopeSealer(sender: id, incarnation: one, key: key).seal([1, 2, 3])
            let second = EnvelopeSealer(sender: id, incarnation: two, key: key).seal([1, 2, 3])
            // Same sender, same sequence, same plaintext: different ciphertexts (different keys).
            #expect(first.suffix(19) != second.suffix(19))
        }
    }

    @Test("an incarnation file beyond 2^62, or not a number, is refused with an error naming it, never a trap")
    func corruptIncarnation() async throws {
        try await withTemporaryDirectory { dir in
            let state = StateDirectory(path: dir)
            try state.prepare()
            for text in ["18446744073709551615\n", "4611686018427387905", "soon"] {
                try text.write(toFile: dir + "/incarnation", atomically: true, encoding: .utf8)
                #expect { try state.nextIncarnation(wallClockMicros: 5_000) } throws: { ($0 as? StateDirectory.Failure)?.description.contains(dir + "/incarnation") == true }
            }
            try String(Limits.counter.upperBound).write(toFile: dir + "/incarnation", atomically: true, encoding: .utf8)
            #expect { try state.nextIncarnation(wallClockMicros: 5_000) } throws: { ($0 as? StateDirectory.Failure)?.description.contains("largest") == true }
        }
    }

    @Test("a group file whose key is not 32 bytes is refused with an error naming the file, never a trap")
    func corruptGroupFile() async throws {
        try await withTemporaryDirectory { dir in
            let state = StateDirectory(path: dir)
            try state.prepare()
            try #"{"name":"home","id":"00112233445566778899aabbccddeeff","key":[1,2,3],"epoch":1}"#.write(toFile: dir + "/groups/home.json", atomically: true, encoding: .utf8)
            #expect { try state.loadGroup("home") } throws: { ($0 as? StateDirectory.Failure)?.description.contains(dir + "/groups/home.json") == true }
        }
    }

    @Test("the key file is created 0600 from the start, and an existing state directory made wider is made private again")
    // No umask(0) here to show "whatever the umask": the umask is the whole process's, and
    // tests run in parallel; a moment of 0 made another test's temporary directory 0777.
    func modes() async throws {
        try await withTemporaryDirectory { dir in
            let state = StateDirectory(path: dir + "/state")
            try FileManager.default.createDirectory(atPath: dir + "/state/groups", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o777])
            try state.prepare()
            try state.saveGroup(GroupIdentity(name: "home", key: .random()))
            func mode(_ path: String) throws -> Int { (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? -1 }
            #expect(try mode(dir + "/state") == 0o700)
            #expect(try mode(dir + "/state/groups") == 0o700)
            #expect(try mode(dir + "/state/groups/home.json") == 0o600)
        }
    }

    @Test("with no group configured an agent makes its own, private group and keeps it")
    func defaultGroupIsPrivate() async throws {
        try await withTemporaryDirectory { dir in
            let one = StateDirectory(path: dir + "/one"), two = StateDirectory(path: dir + "/two")
            try one.prepare()
            try two.prepare()
            let g1 = try one.activeGroup(selecting: nil)
            let g2 = try two.activeGroup(selecting: nil)
            #expect(g1.name == "default")
            #expect(g1.key != g2.key)
            #expect(g1.tag != g2.tag)
            #expect(try one.activeGroup(selecting: nil) == g1)
            let attributes = try FileManager.default.attributesOfItem(atPath: dir + "/one/groups/default.json")
            #expect((attributes[.posixPermissions] as? Int) == 0o600)
        }
    }

    @Test("a join code given at start makes every agent share one group")
    func joinCodeSharesGroup() async throws {
        try await withTemporaryDirectory { dir in
            let code = JoinCode.make(GroupIdentity(name: "x", key: .random()))
            var a = AgentConfiguration(socketPath: dir + "/a.sock", stateDirectory: dir + "/a")
            a.joinCode = code
            var b = AgentConfiguration(socketPath: dir + "/b.sock", stateDirectory: dir + "/b")
            b.joinCode = code
            let ia = try AgentService.loadIdentity(a), ib = try AgentService.loadIdentity(b)
            #expect(ia.group.key == ib.group.key)
            #expect(ia.group.tag == ib.group.tag)
            #expect(ia.peerID != ib.peerID)
        }
    }

    @Test("missing folders of a state directory are made; one that cannot be says which folder and why, in one line")
    func createsMissingFoldersAndNamesTheOneThatFails() async throws {
        try await withTemporaryDirectory { dir in
            try StateDirectory(path: dir + "/a/b/state").prepare()
            var st = stat()
            #expect(stat(dir + "/a/b/state/groups", &st) == 0 && st.st_mode & S_IFMT == S_IFDIR)
            #expect(st.st_mode & 0o777 == 0o700)

            #expect(FileManager.default.createFile(atPath: dir + "/file", contents: Data()))
            do {
                try StateDirectory(path: dir + "/file/state").prepare()
                Issue.record("a state directory under a file was accepted")
            } catch {
                #expect("\(error)" == "cannot create state directory \(dir)/file/state: \(dir)/file/state: Not a directory")
            }
        }
    }
}
