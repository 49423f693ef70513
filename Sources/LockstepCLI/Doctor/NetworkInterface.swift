#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A network interface of this machine as the doctor needs it: is it up, does it carry
/// multicast (mDNS needs it), which addresses does it have.
public struct NetworkInterface: Sendable, Equatable, Codable {
    public var name: String
    public var up: Bool
    public var loopback: Bool
    public var multicast: Bool
    /// IPv4 and IPv6 addresses, numeric.
    public var addresses: [String]

    public init(name: String, up: Bool, loopback: Bool, multicast: Bool, addresses: [String]) {
        self.name = name
        self.up = up
        self.loopback = loopback
        self.multicast = multicast
        self.addresses = addresses
    }

    // The kernel's interface flags (<net/if.h>), spelt out: Glibc imports them as an enum.
    private static let flagUp: UInt32 = 0x1
    private static let flagLoopback: UInt32 = 0x8
    private static let flagMulticast: UInt32 = 0x1000

    /// Every interface, from getifaddrs(3), in the kernel's order.
    public static func all() -> [NetworkInterface] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return [] }
        defer { freeifaddrs(list) }
        var out: [NetworkInterface] = []
        var p = list
        while let entry = p {
            defer { p = entry.pointee.ifa_next }
            let name = String(cString: entry.pointee.ifa_name)
            let flags = UInt32(entry.pointee.ifa_flags)
            var index = out.firstIndex { $0.name == name }
            if index == nil {
                out.append(NetworkInterface(
                    name: name, up: flags & flagUp != 0, loopback: flags & flagLoopback != 0,
                    multicast: flags & flagMulticast != 0, addresses: []))
                index = out.count - 1
            }
            if let address = entry.pointee.ifa_addr, let text = numeric(address) {
                out[index!].addresses.append(text)
            }
        }
        return out
    }

    private static func numeric(_ address: UnsafeMutablePointer<sockaddr>) -> String? {
        let family = Int32(address.pointee.sa_family)
        let length: Int
        switch family {
        case AF_INET: length = MemoryLayout<sockaddr_in>.size
        case AF_INET6: length = MemoryLayout<sockaddr_in6>.size
        default: return nil
        }
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        guard getnameinfo(address, socklen_t(length), &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 else { return nil }
        return String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
