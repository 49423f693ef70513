#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why the DNS-SD daemon cannot be reached, in one line: avahi's compat library maps "no D-Bus"
/// and "no daemon" to the same kDNSServiceErr_Unknown, so look at the system bus socket and
/// avahi's pid file.
enum DNSSDDiagnosis {
    /// A one-line reason for a failed connection.
    static func diagnose(operation: String, error: DNSSDError) -> String {
        let detail = "(\(operation): \(error))"
        if let bus = missingSystemBus { return "no D-Bus system bus (\(bus) missing) \(detail)" }
        guard let pid = avahiPID() else { return "avahi-daemon is not running \(detail)" }
        return "avahi-daemon (pid \(pid)) is not answering on D-Bus \(detail)"
    }

    /// The system bus's socket file (the default, or `unix:path=` in `DBUS_SYSTEM_BUS_ADDRESS`)
    /// when it does not exist; nil when it does, or the bus is not a file. While it is missing
    /// avahi cannot be reached, and an attempt would only start the compat library's thread and
    /// fail.
    static var missingSystemBus: String? {
        systemBusSocket().flatMap { access($0, F_OK) != 0 ? $0 : nil }
    }

    /// The system bus's socket file for `address` (the value of `DBUS_SYSTEM_BUS_ADDRESS`, nil
    /// when unset: D-Bus's default path); nil for an address of another kind (an abstract
    /// socket, TCP), which has no file to look for, and for a path with escapes.
    static func systemBusSocket(address: String? = getenv("DBUS_SYSTEM_BUS_ADDRESS").map { String(cString: $0) }) -> String? {
        guard let address else { return "/run/dbus/system_bus_socket" }
        // The first address D-Bus would try; keys after the transport are comma-separated.
        let first = address.prefix { $0 != ";" }
        guard first.hasPrefix("unix:") else { return nil }
        for pair in first.dropFirst("unix:".count).split(separator: ",") where pair.hasPrefix("path=") {
            let path = pair.dropFirst("path=".count)
            // An escaped value (`%2f`…) is not looked for rather than unescaped wrongly.
            return path.isEmpty || path.contains("%") ? nil : String(path)
        }
        return nil
    }

    /// The PID in avahi's pid file if that process exists.
    static func avahiPID() -> Int32? {
        let fd = open("/run/avahi-daemon/pid", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        let text = String(decoding: buffer[..<count], as: UTF8.self).prefix { $0.isNumber }
        guard let pid = Int32(text), pid > 0 else { return nil }
        return kill(pid, 0) == 0 || errno == EPERM ? pid : nil
    }
}
