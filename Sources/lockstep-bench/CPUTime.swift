import Foundation

/// The CPU time a process has used, read from `/proc`. Two readings give the CPU it used between
/// them: exactly, from the scheduler's run time of each of its threads (`/proc/PID/task/TID/schedstat`,
/// nanoseconds) when the same threads ran at both and no other thread's time shows in the ticks; else from `utime + stime` (`/proc/PID/stat`),
/// which counts ended threads too but only in clock ticks (10 ms: 0.03 % of a core over 30 s, the
/// size of an idle agent's differences).
struct CPUTime {
    /// Run time per thread id, nanoseconds.
    var threads: [Int32: UInt64]
    /// utime + stime, seconds.
    var ticksSeconds: Double

    init(pid: Int32) {
        threads = [:]
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        for task in tasks {
            guard let tid = Int32(task),
                  let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/schedstat", encoding: .utf8),
                  let ns = text.split(separator: " ").first.flatMap({ UInt64($0) }) else { continue }
            threads[tid] = ns
        }
        ticksSeconds = 0
        if let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") {
            // Fields after the command name: state is field 3; utime and stime are 14 and 15.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 12, let u = Double(fields[11]), let s = Double(fields[12]) {
                ticksSeconds = (u + s) / Double(sysconf(Int32(_SC_CLK_TCK)))
            }
        }
    }

    /// Seconds of CPU used since the process started (ended threads included, in ticks).
    var totalSeconds: Double {
        max(ticksSeconds, Double(threads.values.reduce(0, &+)) / 1e9)
    }

    /// Seconds of CPU used since `earlier`, a reading of the same process.
    func seconds(since earlier: CPUTime) -> Double {
        let ticks = max(0, ticksSeconds - earlier.ticksSeconds)
        guard !threads.isEmpty, Set(threads.keys) == Set(earlier.threads.keys) else { return ticks }
        let exact = Double(threads.reduce(0) { $0 + ($1.value &- (earlier.threads[$1.key] ?? 0)) }) / 1e9
        // A thread that started and ended in between is in the ticks only (two ticks: rounding).
        return ticks - exact > 0.02 ? ticks : exact
    }
}
