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
        let bus = systemBusSocketPath()
        if access(bus, F_OK) != 0 { return "no D-Bus system bus (\(bus) missing) \(detail)" }
        guard let pid = avahiPID() else { return "avahi-daemon is not running \(detail)" }
        return "avahi-daemon (pid \(pid)) is not answering on D-Bus \(detail)"
    }

    private static func systemBusSocketPath() -> String {
        if let value = getenv("DBUS_SYSTEM_BUS_ADDRESS").map({ String(cString: $0) }),
            let range = value.firstRange(of: "unix:path=")
        {
            return String(value[range.upperBound...].prefix { $0 != "," && $0 != ";" })
        }
        return "/run/dbus/system_bus_socket"
    }

    /// The PID in avahi's pid file if that process exists.
    private static func avahiPID() -> Int32? {
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
