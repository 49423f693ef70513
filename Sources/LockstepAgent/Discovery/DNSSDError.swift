import CDNSSD

/// A `kDNSServiceErr_*` code of the dns_sd API, with its name.
///
/// avahi's compatibility layer maps most of avahi's own errors onto a few of these; in
/// particular "no daemon", "D-Bus error", "disconnected" and "timeout" all arrive as
/// ``unknown`` (`kDNSServiceErr_Unknown`), so the code alone never says why avahi is missing.
/// ``DNSSDDiscovery`` adds that reason by looking at the system (see its documentation).
public enum DNSSDError: Error, Hashable, Sendable, CustomStringConvertible {
    case unknown
    case noSuchName
    case noMemory
    case badParam
    case badReference
    case badState
    case badFlags
    case unsupported
    case notInitialized
    case alreadyRegistered
    case nameConflict
    case invalid
    case firewall
    case incompatible
    case badInterfaceIndex
    case refused
    case noSuchRecord
    case noAuth
    case noSuchKey
    case natTraversal
    case doubleNAT
    case badTime
    /// A code this table does not know.
    case other(Int32)

    /// The error for a `DNSServiceErrorType` code, or nil for `kDNSServiceErr_NoError`.
    public init?(code: Int32) {
        if Int(code) == kDNSServiceErr_NoError { return nil }
        self = DNSSDError.table.first { $0.code == code }?.error ?? .other(code)
    }

    /// The numeric `DNSServiceErrorType`.
    public var code: Int32 {
        if case .other(let code) = self { return code }
        return DNSSDError.table.first { $0.error == self }!.code
    }

    /// The C name, e.g. `kDNSServiceErr_Unknown`.
    public var name: String {
        if case .other(let code) = self { return "kDNSServiceErr(\(code))" }
        return DNSSDError.table.first { $0.error == self }!.name
    }

    public var description: String { name }

    private static let table: [(error: DNSSDError, code: DNSServiceErrorType, name: String)] = [
        (.unknown, DNSServiceErrorType(kDNSServiceErr_Unknown), "kDNSServiceErr_Unknown"),
        (.noSuchName, DNSServiceErrorType(kDNSServiceErr_NoSuchName), "kDNSServiceErr_NoSuchName"),
        (.noMemory, DNSServiceErrorType(kDNSServiceErr_NoMemory), "kDNSServiceErr_NoMemory"),
        (.badParam, DNSServiceErrorType(kDNSServiceErr_BadParam), "kDNSServiceErr_BadParam"),
        (.badReference, DNSServiceErrorType(kDNSServiceErr_BadReference), "kDNSServiceErr_BadReference"),
        (.badState, DNSServiceErrorType(kDNSServiceErr_BadState), "kDNSServiceErr_BadState"),
        (.badFlags, DNSServiceErrorType(kDNSServiceErr_BadFlags), "kDNSServiceErr_BadFlags"),
        (.unsupported, DNSServiceErrorType(kDNSServiceErr_Unsupported), "kDNSServiceErr_Unsupported"),
        (.notInitialized, DNSServiceErrorType(kDNSServiceErr_NotInitialized), "kDNSServiceErr_NotInitialized"),
        (.alreadyRegistered, DNSServiceErrorType(kDNSServiceErr_AlreadyRegistered), "kDNSServiceErr_AlreadyRegistered"),
        (.nameConflict, DNSServiceErrorType(kDNSServiceErr_NameConflict), "kDNSServiceErr_NameConflict"),
        (.invalid, DNSServiceErrorType(kDNSServiceErr_Invalid), "kDNSServiceErr_Invalid"),
        (.firewall, DNSServiceErrorType(kDNSServiceErr_Firewall), "kDNSServiceErr_Firewall"),
        (.incompatible, DNSServiceErrorType(kDNSServiceErr_Incompatible), "kDNSServiceErr_Incompatible"),
        (.badInterfaceIndex, DNSServiceErrorType(kDNSServiceErr_BadInterfaceIndex), "kDNSServiceErr_BadInterfaceIndex"),
        (.refused, DNSServiceErrorType(kDNSServiceErr_Refused), "kDNSServiceErr_Refused"),
        (.noSuchRecord, DNSServiceErrorType(kDNSServiceErr_NoSuchRecord), "kDNSServiceErr_NoSuchRecord"),
        (.noAuth, DNSServiceErrorType(kDNSServiceErr_NoAuth), "kDNSServiceErr_NoAuth"),
        (.noSuchKey, DNSServiceErrorType(kDNSServiceErr_NoSuchKey), "kDNSServiceErr_NoSuchKey"),
        (.natTraversal, DNSServiceErrorType(kDNSServiceErr_NATTraversal), "kDNSServiceErr_NATTraversal"),
        (.doubleNAT, DNSServiceErrorType(kDNSServiceErr_DoubleNAT), "kDNSServiceErr_DoubleNAT"),
        (.badTime, DNSServiceErrorType(kDNSServiceErr_BadTime), "kDNSServiceErr_BadTime"),
    ]
}
