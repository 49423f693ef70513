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
}
