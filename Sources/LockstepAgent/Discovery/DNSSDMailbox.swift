#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CDNSSD
import LockstepCore
import Logging
import Synchronization
import LockstepPlayerProtocol

/// Commands from other threads to the DNS-SD thread, and the pipe that wakes it.
///
/// Senders append under the mutex and write one byte to the pipe; the loop polls the pipe's
/// read end with the `DNSServiceRef` sockets, drains it, then takes all queued commands.
final class DNSSDMailbox: Sendable {
    enum Command: Sendable {
        case updateTXT([UInt8])
        /// Group tags taken for ours besides the one published (``DNSSDTracker/recognisedTags``).
        case recognise(Set<String>)
        /// While true, instances of another group are not parked (a join looks for a device of
        /// the group it joins that has opened an invite).
        case seekInviters(Bool)
        /// Instances whose peer is reachable (``DNSSDTracker/onSettled(_:)``), all of them.
        case settle(Set<DNSSDServiceKey>)
        /// Instances to resolve again if dormant (``DNSSDTracker/onRefresh(_:)``).
        case refresh(Set<DNSSDServiceKey>)
        /// Instance names not to resolve (``DNSSDTracker/onSpared(_:)``), all of them.
        case spare(Set<String>)
        case stop
    }

    private struct Inbox {
        var commands: [Command] = []
        var closed = false
    }

    private let inbox = Mutex(Inbox())
    let readFD: Int32
    private let writeFD: Int32

    /// Nil if no pipe could be made (out of descriptors); `errno` tells why.
    init?() {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return nil }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        readFD = fds[0]
        writeFD = fds[1]
    }

    deinit {
        close(readFD)
        close(writeFD)
    }

    /// Queues `command` and wakes the loop. Commands after `.stop` are dropped.
    func send(_ command: Command) {
        let accepted = inbox.withLock { inbox in
            guard !inbox.closed else { return false }
            inbox.commands.append(command)
            if case .stop = command { inbox.closed = true }
            return true
        }
        guard accepted else { return }
        var byte: UInt8 = 1
        // A full pipe (EAGAIN) already guarantees a wake-up.
        _ = write(writeFD, &byte, 1)
    }

    /// Empties the pipe and returns the queued commands (called by the loop).
    func take() -> [Command] {
        var buffer = [UInt8](repeating: 0, count: 64)
        while buffer.withUnsafeMutableBytes({ read(readFD, $0.baseAddress, $0.count) }) > 0 {}
        return inbox.withLock { inbox in
            defer { inbox.commands.removeAll() }
            return inbox.commands
        }
    }
}
