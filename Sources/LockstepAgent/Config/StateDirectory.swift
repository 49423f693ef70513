#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LockstepCore
import LockstepPeerWire

/// The agent's persistent identity and settings, in its state directory:
///
///     STATE_DIR/identity         the device key (X25519, 64 hex digits, mode 0600), created once;
///                                the peer id derives from it
///     STATE_DIR/peer-id          (Lockstep 1: a random peer id; replaced by the device key)
///     STATE_DIR/name             the human name, hostname by default
///     STATE_DIR/incarnation      the last incarnation used (each start takes a larger one)
///     STATE_DIR/groups/NAME.json a group's key (mode 0600)
///     STATE_DIR/group            the name of the active group
public struct StateDirectory: Sendable {
    public let path: String

    public init(path: String) {
        self.path = path
    }

    /// `$LOCKSTEP_STATE_DIR`, else `/var/lib/lockstep` for root, else `$XDG_STATE_HOME/lockstep`
    /// (by default `~/.local/state/lockstep`).
    public static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment, uid: UInt32 = getuid()) -> String {
        if let p = environment["LOCKSTEP_STATE_DIR"], !p.isEmpty { return p }
        if uid == 0 { return "/var/lib/lockstep" }
        if let x = environment["XDG_STATE_HOME"], !x.isEmpty { return x + "/lockstep" }
        let home = environment["HOME"] ?? "/tmp"
        return home + "/.local/state/lockstep"
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Creates the directory (mode 0700) if needed, and makes an existing one 0700 (it holds
    /// the group keys: a directory someone made wider must not stay so).
    public func prepare() throws {
        for dir in [path, path + "/groups"] {
            try createDirectory(dir, mode: 0o700)
            guard chmod(dir, 0o700) == 0 else {
                throw Failure(description: "cannot make \(dir) private (mode 0700): \(String(cString: strerror(errno)))")
            }
            var st = stat()
            guard stat(dir, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR, st.st_uid == getuid() else {
                throw Failure(description: "\(dir) is not a directory of this user (uid \(getuid())); give this agent its own --state-dir, or fix its owner")
            }
        }
    }

    /// The device's identity, created on first use. A state directory of Lockstep 1 (a random
    /// `peer-id`, no key) gets a key now: the device's peer id changes once (returned as
    /// `replaced`), and its groups' members admit the new one when it announces its key.
    public func deviceIdentity() throws -> (identity: DeviceIdentity, replaced: PeerID?) {
        let file = path + "/identity"
        if let text = try? read(file) {
            let hex = text.trimmed()
            guard let key = MemberKey(hex: hex), let identity = DeviceIdentity(rawRepresentation: key.bytes) else {
                throw Failure(description: "\(file) does not hold a device key (64 hex digits); remove it to give this device a new identity (its groups' members then see a new device, and it must join again)")
            }
            return (identity, nil)
        }
        let identity = try newDeviceIdentity()
        let old = (try? read(path + "/peer-id")).flatMap { PeerID(hex: $0.trimmed()) }
        if old != nil { unlink(path + "/peer-id") }
        return (identity, old)
    }

    /// A new device key, replacing the one this directory held (if any) in one atomic write:
    /// `lockstep group reset-identity`, for one of two devices started from copies of one state
    /// directory. The group's members admit the new key when the device announces it under the
    /// group key it holds; the old key stays a member (the other copy uses it).
    public func newDeviceIdentity() throws -> DeviceIdentity {
        let identity = DeviceIdentity.generate()
        try write(path + "/identity", Digits.hex(identity.rawRepresentation) + "\n", mode: 0o600)
        return identity
    }

    /// The human name: `override` if given (and then kept), else the stored one, else the hostname.
    public func name(override: String?) throws -> String {
        let file = path + "/name"
        if let override, !override.isEmpty {
            let clean = override.truncated(toUTF8: PeerMessage.maxNameBytes)
            if (try? read(file))?.trimmed() != clean {
                try write(file, clean + "\n", mode: 0o644)
            }
            return clean
        }
        if let stored = try? read(file).trimmed(), !stored.isEmpty {
            return stored
        }
        let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "lockstep"
        let name = host.isEmpty ? "lockstep" : host.truncated(toUTF8: PeerMessage.maxNameBytes)
        try write(file, name + "\n", mode: 0o644)
        return name
    }

    /// Incarnations advance by blocks of 2^24 µs (about 17 s), and the low 24 bits of each are
    /// random: two devices started from one copied state directory, or one device whose clock
    /// went back (no real-time clock) after its file was lost, still take different
    /// incarnations, and so different datagram keys, except with probability 2^-24.
    public static let incarnationBlock: UInt64 = 1 << 24

    /// A new incarnation number, larger than every one used before from this directory: the
    /// wall clock in microseconds (or the block after the last one, if the wall clock is behind
    /// it) with random low bits (see ``incarnationBlock``). A file that does not hold such a
    /// number is refused: a number near the end of the range would make every later start fail,
    /// one past the peers' limit would be refused by them.
    public func nextIncarnation(
        wallClockMicros: UInt64 = UInt64(max(0, Date().timeIntervalSince1970 * 1e6)),
        random: UInt64 = UInt64.random(in: 0..<StateDirectory.incarnationBlock)
    ) throws -> UInt64 {
        let file = path + "/incarnation"
        var last: UInt64 = 0
        if let text = try? read(file) {
            let trimmed = text.trimmed()
            guard let value = UInt64(trimmed), Limits.counter.contains(value) else {
                throw Failure(description: "\(file) must hold a number within \(Limits.counter.lowerBound)...\(Limits.counter.upperBound), not '\(trimmed.prefix(32))'; remove it (the next start writes a good one)")
            }
            last = value
        }
        let block = Self.incarnationBlock
        // `last` ≤ 2^62 (checked above), so none of this overflows.
        let base = max(wallClockMicros, last + block) / block * block
        let next = base + random % block
        guard next > last, next <= Limits.counter.upperBound else {
            throw Failure(description: "\(file) is at its largest incarnation; remove it, or give this device a new identity (remove identity too)")
        }
        try write(file, String(next) + "\n", mode: 0o644)
        return next
    }

    // MARK: Groups

    /// The active group, creating a fresh one named `default` (with a random key) when none
    /// exists: an agent never joins anyone by accident.
    public func activeGroup(selecting name: String?) throws -> GroupIdentity {
        let chosen = name ?? (try? read(path + "/group"))?.trimmed() ?? "default"
        guard StateDirectory.isValidGroupName(chosen) else {
            throw Failure(description: "group name '\(chosen.prefix(32))' (from --group or \(path)/group) must be 1-32 letters, digits, '-' or '_'; fix or remove \(path)/group")
        }
        if let g = try loadGroup(chosen) {
            try setActiveGroup(chosen)
            return g
        }
        let g = GroupIdentity(name: chosen, key: .random())
        try saveGroup(g)
        try setActiveGroup(chosen)
        return g
    }

    public func loadGroup(_ name: String) throws -> GroupIdentity? {
        let file = path + "/groups/\(name).json"
        guard FileManager.default.fileExists(atPath: file) else { return nil }
        do {
            return try JSONDecoder().decode(GroupIdentity.self, from: Data(contentsOf: URL(fileURLWithPath: file)))
        } catch {
            throw Failure(description: "\(file) is not a valid group file (\(Self.oneLine(error))); remove it and join the group again (lockstep group join CODE), or start with --group NAME of another group")
        }
    }

    public func saveGroup(_ group: GroupIdentity) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try write(path + "/groups/\(group.name).json", String(decoding: try encoder.encode(group), as: UTF8.self) + "\n", mode: 0o600)
    }

    public func setActiveGroup(_ name: String) throws {
        if (try? read(path + "/group"))?.trimmed() != name {
            try write(path + "/group", name + "\n", mode: 0o644)
        }
    }

    public static func isValidGroupName(_ s: String) -> Bool { GroupIdentity.isValidName(s) }

    // MARK: Files

    /// Writes `bytes` to the file `name` (relative to the state directory, e.g. `identity` or
    /// `groups/home.json`) atomically and durably, created with `mode` from the start (never
    /// wider, whatever the umask): a new temporary file opened `O_CREAT|O_EXCL|O_NOFOLLOW`, its
    /// data synced, renamed over the file, the directory synced. The directory must exist
    /// (``prepare()``).
    public func write(_ bytes: [UInt8], to name: String, mode: mode_t = 0o600) throws {
        guard !name.isEmpty, !name.hasPrefix("/"), !name.split(separator: "/").contains(where: { $0 == ".." || $0 == "." }) else {
            throw Failure(description: "'\(name)' is not a file name inside the state directory")
        }
        try write(path + "/" + name, bytes, mode: mode)
    }

    /// One line of an error's description.
    static func oneLine(_ error: any Error) -> String {
        String("\(error)".split(whereSeparator: \.isNewline).first ?? "").prefix(200).description
    }

    func read(_ file: String) throws -> String {
        try String(contentsOfFile: file, encoding: .utf8)
    }

    /// Writes atomically and durably: a new temporary file created with `mode` from the start
    /// (never wider, whatever the umask), its data synced, renamed over `file`, and the directory
    /// synced so that the rename survives a power cut.
    func write(_ file: String, _ text: String, mode: mode_t) throws {
        try write(file, Array(text.utf8), mode: mode)
    }

    func write(_ file: String, _ bytes: [UInt8], mode: mode_t) throws {
        let tmp = file + ".tmp.\(getpid())"
        func failure(_ e: Int32 = errno) -> Failure { Failure(description: "cannot write \(file): \(String(cString: strerror(e)))") }
        unlink(tmp)
        let fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else { throw failure() }
        // fchmod: the umask narrowed `mode` at creation, never widened it; make it exactly `mode`.
        let written = bytes.withUnsafeBytes { posixWrite(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count, fchmod(fd, mode) == 0, fsync(fd) == 0 else {
            let e = errno
            close(fd)
            unlink(tmp)
            throw failure(e)
        }
        close(fd)
        guard rename(tmp, file) == 0 else {
            let e = errno
            unlink(tmp)
            throw failure(e)
        }
        let dir = open(PathNames.parent(of: file), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dir >= 0 {
            fsync(dir)
            close(dir)
        }
    }

    /// `mkdir -p` (the caller then sets the mode exactly). FileManager's errors printed as
    /// `CocoaError(code: …)`.
    private func createDirectory(_ dir: String, mode: mode_t) throws {
        if let failed = PathNames.makeFolders(dir, mode: mode) {
            throw Failure(description: "cannot create state directory \(dir): \(failed.folder): \(failed.reason)")
        }
    }
}

/// `write(2)`, by a name the state directory's own `write` methods do not hide (Glibc's or
/// Darwin's, whichever this platform has).
private func posixWrite(_ fd: Int32, _ bytes: UnsafeRawPointer?, _ count: Int) -> Int {
    write(fd, bytes, count)
}
