import Foundation

/// The CPU time a process has used, read from `/proc`. Two readings give the CPU it used between
/// them: exactly, from the scheduler's run time of each of its threads (`/proc/PID/task/TID/schedstat`,
/// nanoseconds) when the same threads ran at both and no other thread's time shows in the ticks; else from `utime + stime` (`/proc/PID/stat`),
/// which counts ended threads too but only in clock ticks (10 ms: 0.03 % of a core over 30 s, the
/// size of an idle agent's differences). When threads came or went in between (a concurrency
/// pool's, which end after idling), the threads at both readings count exactly and only the
/// others' share in ticks (the process's ticks less those of the threads at both).
struct CPUTime {
    /// Run time per thread id, nanoseconds.
    var threads: [Int32: UInt64]
    /// utime + stime per thread id, seconds.
    var threadTicks: [Int32: Double]
    /// utime + stime, seconds.
    var ticksSeconds: Double

    init(pid: Int32) {
        threads = [:]
        threadTicks = [:]
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        for task in tasks {
            guard let tid = Int32(task),
                  let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/schedstat", encoding: .utf8),
                  let ns = text.split(separator: " ").first.flatMap({ UInt64($0) }) else { continue }
            threads[tid] = ns
            threadTicks[tid] = Self.ticks(in: "/proc/\(pid)/task/\(task)/stat")
        }
        ticksSeconds = Self.ticks(in: "/proc/\(pid)/stat") ?? 0
    }

    /// utime + stime of a `stat` file, seconds.
    private static func ticks(in path: String) -> Double? {
        guard let stat = try? String(contentsOfFile: path, encoding: .utf8), let close = stat.lastIndex(of: ")") else { return nil }
        // Fields after the command name: state is field 3; utime and stime are 14 and 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let u = Double(fields[11]), let s = Double(fields[12]) else { return nil }
        return (u + s) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Seconds of CPU used since the process started (ended threads included, in ticks).
    var totalSeconds: Double {
        max(ticksSeconds, Double(threads.values.reduce(0, &+)) / 1e9)
    }

    /// Seconds of CPU used since `earlier`, a reading of the same process.
    func seconds(since earlier: CPUTime) -> Double {
        let ticks = max(0, ticksSeconds - earlier.ticksSeconds)
        guard !threads.isEmpty else { return ticks }
        guard Set(threads.keys) == Set(earlier.threads.keys) else { return mixed(since: earlier, ticks: ticks) }
        let exact = Double(threads.reduce(0) { $0 + ($1.value &- (earlier.threads[$1.key] ?? 0)) }) / 1e9
        // A thread that started and ended in between is in the ticks only (two ticks: rounding).
        return ticks - exact > 0.02 ? ticks : exact
    }

    /// The threads at both readings exactly, the others (come, gone) in ticks.
    private func mixed(since earlier: CPUTime, ticks: Double) -> Double {
        let both = Set(threads.keys).intersection(earlier.threads.keys)
        var exact = 0.0, bothTicks = 0.0
        for tid in both {
            guard let ran = threads[tid], let ranBefore = earlier.threads[tid],
                  let now = threadTicks[tid], let then = earlier.threadTicks[tid] else { return ticks }
            exact += Double(ran &- ranBefore) / 1e9
            bothTicks += now - then
        }
        return exact + max(0, ticks - bothTicks)
    }
}
