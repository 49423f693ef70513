import Testing

@testable import LockstepAgent

@Suite struct DNSSDRetryTests {
    static let s: Int64 = 1_000_000_000

    /// Fails at each moment the retry allows, with no daemon and a bus, and returns the times.
    static func attempts(_ retry: inout DNSSDRetry, from start: Int64, count: Int) -> [Int64] {
        var now = start, times: [Int64] = []
        retry.failed(at: now, daemon: nil)
        while times.count < count {
            now = retry.nextLook(after: now)
            if retry.shouldAttempt(at: now, busMissing: false, daemon: nil) {
                times.append(now - start)
                retry.failed(at: now, daemon: nil)
            }
        }
        return times
    }

    @Test func waitsDoubleAfterEachFailedAttemptUpToTheLongest() {
        var retry = DNSSDRetry(first: 2 * Self.s, longest: 30 * Self.s)
        let times = Self.attempts(&retry, from: 100 * Self.s, count: 7)
        #expect(times == [2, 6, 14, 30, 60, 90, 120].map { $0 * Self.s })
    }

    @Test func theLoopLooksEveryFirstWaitEvenWhileAttemptsAreFarApart() {
        var retry = DNSSDRetry(first: 2 * Self.s, longest: 30 * Self.s)
        for _ in 0..<6 { retry.failed(at: 0, daemon: nil) }
        #expect(retry.nextLook(after: 0) == 2 * Self.s)
        #expect(retry.nextLook(after: 29 * Self.s) == 30 * Self.s, "no later than the attempt that is due")
        #expect(retry.nextLook(after: 40 * Self.s) == 42 * Self.s, "a wait that is over does not make the loop spin")
    }

    @Test func aConnectionStartsTheWaitsOver() {
        var retry = DNSSDRetry(first: 2 * Self.s, longest: 30 * Self.s)
        for _ in 0..<10 { retry.failed(at: 0, daemon: nil) }
        retry.connected()
        retry.failed(at: 50 * Self.s, daemon: nil)
        #expect(!retry.shouldAttempt(at: 51 * Self.s, busMissing: false, daemon: nil))
        #expect(retry.shouldAttempt(at: 52 * Self.s, busMissing: false, daemon: nil), "a daemon lost after it worked is tried again soon")
    }

    @Test func noAttemptWhileTheBusIsMissing() {
        var retry = DNSSDRetry(first: 2 * Self.s, longest: 30 * Self.s)
        retry.failed(at: 0, daemon: nil)
        #expect(!retry.shouldAttempt(at: 100 * Self.s, busMissing: true, daemon: nil))
        #expect(!retry.shouldAttempt(at: 100 * Self.s, busMissing: true, daemon: 42), "nothing could answer, pid file or not")
        #expect(retry.shouldAttempt(at: 100 * Self.s, busMissing: false, daemon: nil), "the bus is back and the wait is over")
    }

    @Test func aDaemonThatAppearsIsTriedAtOnceAndGivenTheFirstWaitIfItIsNotReady() {
        var retry = DNSSDRetry(first: 2 * Self.s, longest: 30 * Self.s)
        for t in [0, 2, 6, 14, 30] { retry.failed(at: Int64(t) * Self.s, daemon: nil) }
        #expect(!retry.shouldAttempt(at: 35 * Self.s, busMissing: false, daemon: nil), "30 s from the last failure")
        #expect(retry.shouldAttempt(at: 35 * Self.s, busMissing: false, daemon: 4242), "a daemon just started")
        // It had not registered on the bus yet: the same daemon is tried again after the first wait.
        retry.failed(at: 35 * Self.s, daemon: 4242)
        #expect(!retry.shouldAttempt(at: 36 * Self.s, busMissing: false, daemon: 4242))
        #expect(retry.shouldAttempt(at: 37 * Self.s, busMissing: false, daemon: 4242))
        // Still failing, the same daemon backs off as any failure does.
        retry.failed(at: 37 * Self.s, daemon: 4242)
        #expect(!retry.shouldAttempt(at: 40 * Self.s, busMissing: false, daemon: 4242))
        #expect(retry.shouldAttempt(at: 41 * Self.s, busMissing: false, daemon: 4242))
    }

    @Test func manyFailuresNeitherOverflowNorShortenTheWait() {
        var retry = DNSSDRetry(first: 3, longest: .max - 1)
        var last: Int64 = 0
        for n in 1...200 {
            let wait = retry.wait(afterFailures: n)
            #expect(wait >= last && wait <= .max - 1)
            last = wait
        }
        #expect(last == .max - 1)
        retry.failed(at: .max - 10, daemon: nil)
        let look = retry.nextLook(after: .max - 10)
        #expect(look > .max - 10, "saturates rather than wrapping into the past")
    }
}

@Suite struct SystemBusSocketTests {
    @Test func withoutAnAddressItIsDBusDefaultPath() {
        #expect(DNSSDDiagnosis.systemBusSocket(address: nil) == "/run/dbus/system_bus_socket")
    }

    @Test func aUnixPathAddressNamesItsFile() {
        #expect(DNSSDDiagnosis.systemBusSocket(address: "unix:path=/tmp/bus") == "/tmp/bus")
        #expect(DNSSDDiagnosis.systemBusSocket(address: "unix:guid=abc,path=/tmp/bus") == "/tmp/bus")
        #expect(DNSSDDiagnosis.systemBusSocket(address: "unix:path=/tmp/bus,guid=abc;tcp:host=x") == "/tmp/bus")
    }

    @Test func addressesWithNoFileToLookForAreNotChecked() {
        // nil: the agent then always attempts, as it cannot tell the bus is missing.
        #expect(DNSSDDiagnosis.systemBusSocket(address: "unix:abstract=/tmp/dbus-x") == nil)
        #expect(DNSSDDiagnosis.systemBusSocket(address: "tcp:host=localhost,port=1234") == nil)
        #expect(DNSSDDiagnosis.systemBusSocket(address: "tcp:host=x;unix:path=/tmp/bus") == nil)
        #expect(DNSSDDiagnosis.systemBusSocket(address: "unix:path=/tmp/a%20b") == nil)
        #expect(DNSSDDiagnosis.systemBusSocket(address: "unix:path=") == nil)
        #expect(DNSSDDiagnosis.systemBusSocket(address: "") == nil)
    }
}
