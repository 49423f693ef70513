#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LockstepCore

/// Lets go of the pages of code and read-only data that the agent mapped while it started and no
/// longer uses.
///
/// Why: an idle agent touches about 8 MiB in 30 s, but its resident set is three times that:
/// clean pages of its binary and libraries touched once while starting (argument parsing, NIO,
/// key set-up, the runtime's metadata), with the kernel's fault-around mapping 64 KiB around every
/// page fault (docs/scale.md). Those pages are copies of files in the page cache. Unmapping them
/// (`madvise(MADV_DONTNEED)`) takes them out of the agent's resident set and leaves them to the
/// page cache, shared and reclaimable; a page the agent touches again is mapped again by a minor
/// fault, from the same file.
///
/// Only mappings where that is exact are touched: private, not writable, backed by a file, and
/// with no anonymous (copy-on-write) page. A read-only mapping that holds written pages (the
/// relocated data that RELRO protects after start-up) would be read back from the file, without
/// its relocations; it has anonymous pages, so it is left alone. Heap, stacks and writable data
/// are never touched.
enum ResidentPages {
    /// The first trim: start-up (arguments, keys, NIO, the first peers' sessions and clock
    /// bursts) is over by then in groups that form within seconds.
    static let firstTrim = TimeSpan.seconds(20)
    /// Later trims: what a group forming or a rare request touched goes too. In an idle agent a
    /// trim took 8–16 ms, and mapping back what it then used about 260 minor faults.
    static let trimInterval = TimeSpan.seconds(600)

    /// A mapping that can be let go of: its address range and the bytes it has resident.
    struct Mapping: Equatable {
        var start: UInt
        var end: UInt
        var residentBytes: Int
    }

    /// The mappings of `smaps` (the text of `/proc/self/smaps`) that can be let go of (see the
    /// type's documentation). Lines it does not understand are skipped; a mapping whose
    /// `Anonymous` line is missing or unreadable is kept, as are those with nothing resident.
    static func droppable(smaps: Substring) -> [Mapping] {
        var out: [Mapping] = []
        var current: (mapping: Mapping, eligible: Bool, anonymousKnown: Bool)?
        func finish() {
            if let c = current, c.eligible, c.anonymousKnown, c.mapping.residentBytes > 0 { out.append(c.mapping) }
            current = nil
        }
        for line in smaps.split(separator: "\n", omittingEmptySubsequences: true) {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let first = fields.first else { continue }
            if first.hasSuffix(":") {
                // A field of the current mapping: "Rss:  123 kB".
                guard current != nil, fields.count >= 2, let kB = Int(fields[1]), kB >= 0, kB < Int.max / 1024 else {
                    if first == "Anonymous:" { current?.eligible = false }
                    continue
                }
                switch first {
                case "Rss:": current?.mapping.residentBytes = kB * 1024
                case "Anonymous:":
                    current?.anonymousKnown = true
                    if kB != 0 { current?.eligible = false }
                case "Locked:" where kB != 0: current?.eligible = false
                default: break
                }
                continue
            }
            // A mapping's header: "start-end perms offset dev inode [path]". Any other line ends
            // the mapping before it, so that its fields are not taken for that one's.
            finish()
            let bounds = first.split(separator: "-")
            guard fields.count >= 5, bounds.count == 2, let start = UInt(bounds[0], radix: 16), let end = UInt(bounds[1], radix: 16),
                start < end, end - start <= UInt(Int.max)
            else { continue }
            let perms = fields[1]
            let path = fields.count >= 6 ? fields[5] : ""
            let eligible = perms.count == 4 && perms.hasPrefix("r") && perms.dropFirst().first == "-" && perms.hasSuffix("p")
                && fields[4] != "0" && path.hasPrefix("/") && !path.hasPrefix("/dev/")
            current = (Mapping(start: start, end: end, residentBytes: 0), eligible, false)
        }
        finish()
        return out
    }

    /// What ``trim()`` did.
    struct Trimmed: Equatable {
        /// Mappings let go of, and the bytes they had resident.
        var mappings = 0
        var bytes = 0
        /// Why nothing was done, if so.
        var skipped: String?
    }

    /// Lets go of this process's droppable mappings (see the type's documentation). Linux only;
    /// elsewhere it does nothing. (glibc's `malloc_trim` gave nothing back in an idle agent: its
    /// anonymous memory was 2.6 MiB before and after.)
    static func trim() -> Trimmed {
        #if os(Linux)
        guard let text = readFile("/proc/self/smaps") else { return Trimmed(skipped: "/proc/self/smaps cannot be read") }
        let size = Int(sysconf(Int32(_SC_PAGESIZE)))
        var done = Trimmed()
        for m in droppable(smaps: text[...]) where size > 0 && m.start % UInt(size) == 0 {
            guard let address = UnsafeMutableRawPointer(bitPattern: m.start) else { continue }
            if madvise(address, Int(m.end - m.start), MADV_DONTNEED) == 0 {
                done.mappings += 1
                done.bytes += m.residentBytes
            }
        }
        return done
        #else
        return Trimmed(skipped: "only on Linux")
        #endif
    }

    /// The whole of a (procfs) file, read until end of file; nil if it cannot be opened.
    /// (`String(contentsOfFile:)` is not used: it read `/proc/self/smaps` only in part, so the
    /// libraries mapped after the executable were never let go of: 15.3 MiB resident after the
    /// trim instead of 11.6, 2-host lab.)
    static func readFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            bytes.append(contentsOf: chunk[0..<n])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
