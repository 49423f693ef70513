#if canImport(Glibc)
import Glibc
#endif
import LockstepCore
import Testing

@testable import LockstepAgent

/// The conversion of the kernel's realtime receive timestamps onto CLOCK_MONOTONIC.
@Suite("Receive timestamps")
struct ReceiveTimestampTests {
    @Test("a realtime instant read now converts to a monotonic time between monotonic reads taken around it")
    func conversionLandsBetweenReads() {
        for _ in 0..<1000 {
            let before = MonotonicClock.read()
            let (realNow, offset) = PeerSocket.realtimeToMonotonic()
            let after = MonotonicClock.read()
            let converted = realNow + offset
            #expect(converted >= before - 20_000 && converted <= after + 20_000, "\(converted - before) ns after the first read, \(after - converted) ns before the second")
        }
    }
}
