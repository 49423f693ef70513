import CDNSSD

/// Owns one `DNSServiceRef` (a registration, browse, resolve or record query) and turns its C
/// callbacks into ``Reply`` values.
///
/// Not thread-safe, by design: every method, and `deinit`, must run on the thread of the
/// ``DNSSDEventLoop`` that created it, because avahi's compatibility library is not thread-safe.
/// The C callbacks find this object through an unretained `Unmanaged` pointer passed as the
/// context; that is safe because callbacks only run inside ``processResult()``, called on a
/// live object, and ``cancel()`` (`DNSServiceRefDeallocate`) ends them for good.
///
/// In avahi's compat layer every `DNSServiceRef` is a private `AvahiClient` (one D-Bus
/// connection) plus a helper thread that waits for D-Bus traffic and then makes
/// ``socket`` readable; ``processResult()`` runs the callbacks on the calling thread.
final class DNSSDServiceRef {
    enum Reply {
        /// The registration is published under `name` (possibly renamed by avahi).
        case registered(name: String)
        case browse(added: Bool, name: String, type: String, domain: String, interfaceIndex: UInt32)
        /// SRV target (with trailing dot), port, raw TXT record data.
        case resolved(hostTarget: String, port: UInt16, txt: [UInt8], interfaceIndex: UInt32)
        case record(added: Bool, rrtype: UInt16, rdata: [UInt8], interfaceIndex: UInt32)
        /// The operation reported an error. With avahi, interface 0 means the whole client
        /// failed (daemon or D-Bus gone); a nonzero interface means this lookup failed (e.g. a
        /// resolve timed out after 5 s) while the connection is fine.
        case failed(DNSSDError, interfaceIndex: UInt32)
    }

    /// What this is, for logs: e.g. `browse _lockstep._udp`.
    let label: String
    private var ref: DNSServiceRef?
    private let onReply: (Reply) -> Void

    private init(label: String, onReply: @escaping (Reply) -> Void) {
        self.label = label
        self.onReply = onReply
    }

    deinit { cancel() }

    var isActive: Bool { ref != nil }

    /// The descriptor to poll for `POLLIN`; -1 once cancelled.
    var socket: Int32 { ref.map { DNSServiceRefSockFD($0) } ?? -1 }

    /// Runs the pending callbacks (call when ``socket`` is readable). Returns the error if the
    /// library could not (the reference is then unusable).
    func processResult() -> DNSSDError? {
        guard let ref else { return .badReference }
        return DNSSDError(code: DNSServiceProcessResult(ref))
    }

    /// Stops the operation (`DNSServiceRefDeallocate`; for a registration, this withdraws the
    /// service). Idempotent. Must not be called from inside this object's own callback.
    func cancel() {
        guard let ref else { return }
        self.ref = nil
        DNSServiceRefDeallocate(ref)
    }

    private var context: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    private static func from(_ context: UnsafeMutableRawPointer?) -> DNSSDServiceRef {
        Unmanaged<DNSSDServiceRef>.fromOpaque(context!).takeUnretainedValue()
    }

    private static func check(_ code: DNSServiceErrorType) throws(DNSSDError) {
        if let error = DNSSDError(code: code) { throw error }
    }

    // MARK: Operations

    /// `DNSServiceRegister` on all interfaces. `name` nil or empty lets avahi use the host name.
    static func register(
        name: String?, type: String, port: UInt16, txt: [UInt8], onReply: @escaping (Reply) -> Void
    ) throws(DNSSDError) -> DNSSDServiceRef {
        let object = DNSSDServiceRef(label: "register \(name ?? "") \(type)", onReply: onReply)
        let callback: DNSServiceRegisterReply = { _, _, errorCode, name, _, _, context in
            let object = DNSSDServiceRef.from(context)
            if let error = DNSSDError(code: errorCode) {
                object.onReply(.failed(error, interfaceIndex: 0))
            } else {
                object.onReply(.registered(name: name.map { String(cString: $0) } ?? ""))
            }
        }
        var ref: DNSServiceRef?
        let code = withOptionalCString(name?.isEmpty == false ? name : nil) { cName in
            type.withCString { cType in
                txt.withUnsafeBytes { txtBytes in
                    DNSServiceRegister(
                        &ref, 0, 0, cName, cType, nil, nil, port.bigEndian, UInt16(txtBytes.count),
                        txtBytes.baseAddress, callback, object.context)
                }
            }
        }
        try check(code)
        object.ref = ref
        return object
    }

    /// `DNSServiceUpdateRecord` of the primary TXT record of a registration.
    func updateTXT(_ txt: [UInt8]) throws(DNSSDError) {
        guard let ref else { throw .badReference }
        let code = txt.withUnsafeBytes { bytes in
            DNSServiceUpdateRecord(ref, nil, 0, UInt16(bytes.count), bytes.baseAddress, 0)
        }
        try DNSSDServiceRef.check(code)
    }

    /// `DNSServiceBrowse` on all interfaces.
    static func browse(type: String, domain: String, onReply: @escaping (Reply) -> Void) throws(DNSSDError) -> DNSSDServiceRef {
        let object = DNSSDServiceRef(label: "browse \(type)", onReply: onReply)
        let callback: DNSServiceBrowseReply = { _, flags, interfaceIndex, errorCode, name, type, domain, context in
            let object = DNSSDServiceRef.from(context)
            if let error = DNSSDError(code: errorCode) {
                object.onReply(.failed(error, interfaceIndex: interfaceIndex))
                return
            }
            guard let name, let type, let domain else { return }
            object.onReply(
                .browse(
                    added: flags & DNSServiceFlags(kDNSServiceFlagsAdd) != 0, name: String(cString: name),
                    type: String(cString: type), domain: String(cString: domain), interfaceIndex: interfaceIndex))
        }
        var ref: DNSServiceRef?
        let code = type.withCString { cType in
            domain.withCString { cDomain in
                DNSServiceBrowse(&ref, 0, 0, cType, cDomain, callback, object.context)
            }
        }
        try check(code)
        object.ref = ref
        return object
    }

    /// `DNSServiceResolve` of one instance on one interface. Keeps running: avahi reports again
    /// when the SRV target or the TXT record changes.
    static func resolve(
        name: String, type: String, domain: String, interfaceIndex: UInt32, onReply: @escaping (Reply) -> Void
    ) throws(DNSSDError) -> DNSSDServiceRef {
        let object = DNSSDServiceRef(label: "resolve \(name)%\(interfaceIndex)", onReply: onReply)
        let callback: DNSServiceResolveReply = { _, _, interfaceIndex, errorCode, _, hostTarget, port, txtLen, txtRecord, context in
            let object = DNSSDServiceRef.from(context)
            if let error = DNSSDError(code: errorCode) {
                object.onReply(.failed(error, interfaceIndex: interfaceIndex))
                return
            }
            guard let hostTarget else { return }
            let txt = txtRecord.map { Array(UnsafeBufferPointer(start: $0, count: Int(txtLen))) } ?? []
            object.onReply(
                .resolved(
                    hostTarget: String(cString: hostTarget), port: UInt16(bigEndian: port), txt: txt,
                    interfaceIndex: interfaceIndex))
        }
        var ref: DNSServiceRef?
        let code = name.withCString { cName in
            type.withCString { cType in
                domain.withCString { cDomain in
                    DNSServiceResolve(&ref, 0, interfaceIndex, cName, cType, cDomain, callback, object.context)
                }
            }
        }
        try check(code)
        object.ref = ref
        return object
    }

    /// `DNSServiceQueryRecord` (class IN) of `fullName` on one interface. Keeps running and
    /// reports additions and removals (goodbyes, expiry).
    static func queryRecord(
        fullName: String, rrtype: UInt16, interfaceIndex: UInt32, onReply: @escaping (Reply) -> Void
    ) throws(DNSSDError) -> DNSSDServiceRef {
        let object = DNSSDServiceRef(label: "query \(fullName)%\(interfaceIndex) type \(rrtype)", onReply: onReply)
        let callback: DNSServiceQueryRecordReply = { _, flags, interfaceIndex, errorCode, _, rrtype, _, rdlen, rdata, _, context in
            let object = DNSSDServiceRef.from(context)
            if let error = DNSSDError(code: errorCode) {
                object.onReply(.failed(error, interfaceIndex: interfaceIndex))
                return
            }
            let bytes = rdata.map { Array(UnsafeRawBufferPointer(start: $0, count: Int(rdlen))) } ?? []
            object.onReply(
                .record(
                    added: flags & DNSServiceFlags(kDNSServiceFlagsAdd) != 0, rrtype: rrtype, rdata: bytes,
                    interfaceIndex: interfaceIndex))
        }
        var ref: DNSServiceRef?
        let code = fullName.withCString { cName in
            DNSServiceQueryRecord(
                &ref, 0, interfaceIndex, cName, rrtype, UInt16(kDNSServiceClass_IN), callback, object.context)
        }
        try check(code)
        object.ref = ref
        return object
    }
}

private func withOptionalCString<R>(_ string: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let string else { return body(nil) }
    return string.withCString { body($0) }
}
