import Foundation
import Testing

@testable import LockstepAgent

/// Which mappings the agent lets go of (``ResidentPages``), and that doing so in a running process
/// leaves it running.
@Suite struct ResidentPagesTests {
    /// Part of a real agent's `/proc/PID/smaps`, with the fields it does not read cut.
    static let smaps = """
        55d4a2000000-55d4a2400000 r--p 00000000 08:01 1311 /usr/bin/lockstepd
        Size:               4096 kB
        Rss:                1024 kB
        Anonymous:             0 kB
        Locked:                0 kB
        VmFlags: rd mr mw me sd
        55d4a2400000-55d4a2b00000 r-xp 00400000 08:01 1311 /usr/bin/lockstepd
        Rss:                5120 kB
        Anonymous:             0 kB
        Locked:                0 kB
        55d4a2b00000-55d4a2c00000 r--p 00b00000 08:01 1311 /usr/bin/lockstepd
        Rss:                1024 kB
        Anonymous:          1024 kB
        Locked:                0 kB
        55d4a2c00000-55d4a2c10000 rw-p 00c00000 08:01 1311 /usr/bin/lockstepd
        Rss:                  64 kB
        Anonymous:            16 kB
        55d4a3000000-55d4a3100000 rw-p 00000000 00:00 0 [heap]
        Rss:                 512 kB
        Anonymous:           512 kB
        7f1e00000000-7f1e00100000 r-xp 00028000 08:01 2222 /usr/lib/x86_64-linux-gnu/libc.so.6
        Rss:                1536 kB
        Anonymous:             0 kB
        Locked:                0 kB
        7f1e00200000-7f1e00201000 r--p 00000000 08:01 3333 /usr/lib/locale/C.utf8/LC_CTYPE
        Rss:                   0 kB
        Anonymous:             0 kB
        7f1e00300000-7f1e00400000 r--s 00000000 00:19 4444 /dev/shm/avahi
        Rss:                  16 kB
        Anonymous:             0 kB
        7f1e00500000-7f1e00600000 r-xp 00000000 08:01 5555 /usr/lib/libpinned.so
        Rss:                  64 kB
        Anonymous:             0 kB
        Locked:               64 kB
        7f1e00700000-7f1e00800000 r--p 00000000 08:01 6666 /usr/lib/libnoanon.so
        Rss:                  64 kB
        7f1e00900000-7f1e00a00000 r--p 00000000 00:05 7777 /dev/mem
        Rss:                  64 kB
        Anonymous:             0 kB
        7fff5a000000-7fff5a021000 rw-p 00000000 00:00 0 [stack]
        Rss:                  40 kB
        Anonymous:            40 kB
        7fff5a1f0000-7fff5a1f2000 r-xp 00000000 00:00 0 [vdso]
        Rss:                   8 kB
        Anonymous:             0 kB
        """

    @Test func onlyCleanReadOnlyPrivateFileMappingsWithPagesResidentAreDroppable() {
        let found = ResidentPages.droppable(smaps: Self.smaps[...])
        #expect(found == [
            .init(start: 0x55d4_a200_0000, end: 0x55d4_a240_0000, residentBytes: 1_048_576),
            .init(start: 0x55d4_a240_0000, end: 0x55d4_a2b0_0000, residentBytes: 5_242_880),
            .init(start: 0x7f1e_0000_0000, end: 0x7f1e_0010_0000, residentBytes: 1_572_864),
        ])
        // Left alone: RELRO's relocated pages (read-only, anonymous), writable data, the heap, a
        // mapping with nothing resident, a shared one, a locked one, one whose Anonymous line is
        // missing, a device, the stack and the vDSO.
    }

    @Test func linesItDoesNotUnderstandAreSkippedAndNeverTrapAndEndTheMappingBefore() {
        let odd = """
            not a mapping at all
            9000-a000 r--p 00000000 08:01 9 /lib/before.so
            Anonymous: 0 kB
            ffff-0000 r--p 00000000 08:01 1 /backwards
            Rss: 4 kB
            Rss: 99999999999999999999999 kB
            zz-yy r--p 0 08:01 1 /hex
            0-ffffffffffffffff r--p 00000000 08:01 9 /lib/all.so
            Rss: 4 kB
            Anonymous: 0 kB
            1000-2000 r--p 00000000 08:01 9 /lib/x.so
            Rss: -4 kB
            Anonymous: 0 kB
            3000-4000 r--p 00000000 08:01 9 /lib/y.so
            Rss: 4 kB
            Anonymous: lots kB
            5000-6000 r--p 00000000 08:01 9 /lib/z.so
            Rss: 9223372036854775807 kB
            Anonymous: 0 kB
            7000-8000 r--p 00000000 08:01 9 /lib/ok.so
            Rss: 4 kB
            Anonymous: 0 kB
            """
        #expect(ResidentPages.droppable(smaps: odd[...]) == [.init(start: 0x7000, end: 0x8000, residentBytes: 4_096)])
        #expect(ResidentPages.droppable(smaps: ""[...]).isEmpty)
    }

    #if os(Linux)
    @Test func aRunningProcessLetsGoOfPagesAndKeepsRunning() throws {
        let before = try Self.residentBytes()
        let trimmed = ResidentPages.trim()
        #expect(trimmed.skipped == nil)
        #expect(trimmed.mappings > 0)
        #expect(trimmed.bytes > 1 << 20, "this test process has more than 1 MiB of its code resident")
        // Code and data used after the trim are mapped again from their files, unchanged.
        let data = try JSONEncoder().encode(["pages": trimmed.mappings])
        #expect(try JSONDecoder().decode([String: Int].self, from: data) == ["pages": trimmed.mappings])
        let after = try Self.residentBytes()
        #expect(after < before, "resident \(before) bytes before, \(after) after")
    }

    /// `String(contentsOfFile:)` read 4,043 of this file's 154,875 bytes (one page): the agent
    /// then let go of its own code only, and kept its libraries' (3.7 MiB).
    @Test func smapsIsReadToItsEndSoLibrariesMappedAfterTheExecutableAreLetGoOfToo() throws {
        let text = try #require(ResidentPages.readFile("/proc/self/smaps"))
        // The vDSO comes after every file mapping; a read that stops early misses it.
        #expect(text.contains("[vdso]"), "read \(text.utf8.count) bytes without the vDSO's mapping")
        let libc = text.split(separator: "\n").filter { $0.contains("libc.so") && $0.contains(" r-xp ") }
        let droppable = ResidentPages.droppable(smaps: text[...])
        #expect(!libc.isEmpty && libc.allSatisfy { line in
            let range = line.prefix { $0 != " " }.split(separator: "-").compactMap { UInt($0, radix: 16) }
            return range.count == 2 && droppable.contains { $0.start == range[0] }
        }, "libc's code is among the mappings let go of")
    }

    /// This process's resident set, from `/proc/self/statm` (pages).
    static func residentBytes() throws -> Int {
        let fields = try String(contentsOfFile: "/proc/self/statm", encoding: .utf8).split(separator: " ")
        return try #require(Int(fields[1])) * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
    #endif
}
