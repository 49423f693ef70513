import Foundation
import LockstepTestKit
import Testing

@testable import LockstepAgent

/// `PathNames.parent` gives what `NSString.deletingLastPathComponent` gave for the paths the
/// agent uses (socket, lock and state files).
@Suite struct PathNamesTests {
    @Test(arguments: [
        ("/run/lockstep/agent.sock", "/run/lockstep"), ("/tmp/x", "/tmp"), ("/x", "/"), ("/", "/"),
        ("agent.sock", ""), ("dir/agent.sock", "dir"), ("/run/lockstep/", "/run"), ("//x", "/"), ("", ""),
    ])
    func parentIsTheFolderAPathIsIn(path: String, parent: String) {
        #expect(PathNames.parent(of: path) == parent)
    }

    @Test func makeFoldersMakesEachMissingOneAndNamesTheOneThatFails() async {
        await withTemporaryDirectory { dir in
            #expect(PathNames.makeFolders(dir + "/a/b//c/", mode: 0o700) == nil)
            var st = stat()
            #expect(stat(dir + "/a/b/c", &st) == 0 && st.st_mode & S_IFMT == S_IFDIR)
            #expect(PathNames.makeFolders(dir + "/a/b", mode: 0o700) == nil)
            #expect(FileManager.default.createFile(atPath: dir + "/f", contents: Data()))
            let failed = PathNames.makeFolders(dir + "/f/g/h", mode: 0o700)
            #expect(failed?.folder == dir + "/f/g")
            #expect(failed?.reason == "Not a directory")
        }
    }
}
