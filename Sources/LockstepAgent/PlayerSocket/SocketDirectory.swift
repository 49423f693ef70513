#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The directory the player socket lives in, checked before anything is created in it (review
/// finding M8). Whoever controls that directory can unlink our socket and bind theirs, or plant
/// a symlink where the lock file goes; so the agent uses it only if it is a real directory (not a
/// symlink) owned by the agent's user (or root, such as `/run`'s), and writable by nobody else
/// (or sticky, as `/tmp`: there nobody can replace what is ours, and the lock file is checked).
/// A missing directory is created with `mode` (0700 unless the socket is shared with a group).
public enum SocketDirectory {
    public struct Unsafe: Error, CustomStringConvertible {
        public let description: String
    }

    /// Creates `dir` if needed and checks it; throws ``Unsafe`` with one line saying what is wrong
    /// and the way out.
    public static func prepare(_ dir: String, mode: mode_t = 0o700, uid: uid_t = getuid()) throws {
        var st = stat()
        if lstat(dir, &st) != 0 {
            guard errno == ENOENT else { throw Unsafe(description: "cannot inspect the socket directory \(dir): \(String(cString: strerror(errno)))") }
            let parent = PathNames.parent(of: dir)
            // Its parents as `mkdir -p` makes them; a failure shows in the mkdir below.
            if !parent.isEmpty && parent != dir { _ = PathNames.makeFolders(parent, mode: 0o777) }
            // mkdir applies the umask, which only narrows; chmod below makes it exactly `mode`.
            guard mkdir(dir, mode) == 0 || errno == EEXIST else {
                throw Unsafe(description: "cannot create the socket directory \(dir): \(String(cString: strerror(errno)))")
            }
            guard lstat(dir, &st) == 0 else { throw Unsafe(description: "cannot inspect the socket directory \(dir): \(String(cString: strerror(errno)))") }
            if st.st_uid == uid && (st.st_mode & S_IFMT) == S_IFDIR { chmod(dir, mode); st.st_mode = (st.st_mode & ~0o7777) | mode }
        }
        if let problem = problem(with: st, uid: uid) {
            throw Unsafe(description: "refusing the socket directory \(dir): it \(problem); remove it, or set XDG_RUNTIME_DIR, or give --socket a path in a directory of your own")
        }
    }

    /// What makes a directory with these attributes unsafe for `uid`'s socket, if anything.
    static func problem(with st: stat, uid: uid_t) -> String? {
        if (st.st_mode & S_IFMT) == S_IFLNK { return "is a symbolic link" }
        if (st.st_mode & S_IFMT) != S_IFDIR { return "is not a directory" }
        if st.st_uid != uid && st.st_uid != 0 { return "belongs to uid \(st.st_uid), not \(uid)" }
        if st.st_mode & 0o022 != 0 && st.st_mode & S_ISVTX == 0 { return "is writable by other users (mode \(String(st.st_mode & 0o7777, radix: 8)))" }
        return nil
    }
}
