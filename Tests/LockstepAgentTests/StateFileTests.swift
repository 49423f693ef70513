import Foundation
import LockstepPeerWire
import LockstepTestKit
import Testing

@testable import LockstepAgent

/// Review finding L2: state files are written atomically with their final mode, and a bad file or
/// directory gives one clear line naming it and the way out, never a trap or a silent lockout.
@Suite("State files")
struct StateFileTests {
    @Test("write(_:to:) creates the file 0600, replaces it whole, leaves no temporary file, and refuses names outside the directory")
    func writeFile() async throws {
        try await withTemporaryDirectory { dir in
            let state = StateDirectory(path: dir + "/state")
            try state.prepare()
            try state.write(Array("first".utf8), to: "groups/chain")
            try state.write(Array("second".utf8), to: "groups/chain")
            let file = dir + "/state/groups/chain"
            #expect(try String(contentsOfFile: file, encoding: .utf8) == "second")
            var st = stat()
            #expect(lstat(file, &st) == 0 && st.st_mode & 0o7777 == 0o600)
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir + "/state/groups") == ["chain"])
            for bad in ["../escape", "/etc/passwd", "", "groups/./x"] {
                #expect(throws: StateDirectory.Failure.self) { try state.write([1], to: bad) }
            }
        }
    }

    @Test("a write through a symlink planted at the temporary name fails and leaves the symlink's target untouched")
    func noFollow() async throws {
        try await withTemporaryDirectory { dir in
            let state = StateDirectory(path: dir + "/state")
            try state.prepare()
            try "precious".write(toFile: dir + "/victim", atomically: false, encoding: .utf8)
            // The temporary name is FILE.tmp.PID: unlinked first, then created O_EXCL|O_NOFOLLOW.
            #expect(symlink(dir + "/victim", dir + "/state/identity.tmp.\(getpid())") == 0)
            try state.write(Array("key".utf8), to: "identity")
            #expect(try String(contentsOfFile: dir + "/victim", encoding: .utf8) == "precious")
            #expect(try String(contentsOfFile: dir + "/state/identity", encoding: .utf8) == "key")
        }
    }

    @Test("a corrupt group file is one line naming the file and how to get out")
    func corruptGroupWayOut() async throws {
        try await withTemporaryDirectory { dir in
            let state = StateDirectory(path: dir)
            try state.prepare()
            try "{not json".write(toFile: dir + "/groups/home.json", atomically: true, encoding: .utf8)
            #expect {
                try state.loadGroup("home")
            } throws: { error in
                let text = "\(error)"
                return text.contains(dir + "/groups/home.json") && text.contains("lockstep group join") && !text.contains("\n")
            }
        }
    }

    @Test("a state directory of another user is refused with a clear line")
    func foreignStateDirectory() async {
        await withTemporaryDirectory { dir in
            #expect(mkdir(dir + "/state", 0o700) == 0)
            #expect(chown(dir + "/state", 65534, 65534) == 0)
            #expect {
                try StateDirectory(path: dir + "/state").prepare()
            } throws: { error in
                "\(error)".contains("not a directory of this user") && !"\(error)".contains("\n")
            }
        }
    }
}
