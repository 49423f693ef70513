import CLockstepSPAKE2

/// One side of one SPAKE2 exchange (BoringSSL's, over curve25519): both sides derive the same
/// 64-byte key if and only if they used the same password, and an eavesdropper or an active
/// attacker learns nothing that lets it test passwords offline (each run is one online guess).
///
/// Single use: ``message(password:)`` once, then ``key(from:)`` once. A class only to free the C
/// context; not shared between threads.
public final class SPAKE2Exchange: @unchecked Sendable {
    public enum Role: Sendable { case joiner, inviter }

    private let ctx: OpaquePointer
    private var sent = false
    private var done = false

    public init?(role: Role) {
        let me = Array((role == .joiner ? "lockstep joiner v1" : "lockstep inviter v1").utf8)
        let them = Array((role == .joiner ? "lockstep inviter v1" : "lockstep joiner v1").utf8)
        guard let c = me.withUnsafeBufferPointer({ m in
            them.withUnsafeBufferPointer { t in
                CCryptoBoringSSL_SPAKE2_CTX_new(role == .joiner ? lockstep_spake2_alice : lockstep_spake2_bob, m.baseAddress, m.count, t.baseAddress, t.count)
            }
        }) else { return nil }
        ctx = c
    }

    deinit { CCryptoBoringSSL_SPAKE2_CTX_free(ctx) }

    /// This side's 32-byte message for `password`; nil if called twice or if it fails.
    public func message(password: [UInt8]) -> [UInt8]? {
        guard !sent else { return nil }
        sent = true
        var out = [UInt8](repeating: 0, count: Int(LOCKSTEP_SPAKE2_MSG_SIZE))
        var length = 0
        let ok = out.withUnsafeMutableBufferPointer { o in
            password.withUnsafeBufferPointer { p in CCryptoBoringSSL_SPAKE2_generate_msg(ctx, o.baseAddress, &length, o.count, p.baseAddress, p.count) }
        }
        return ok == 1 && length == out.count ? out : nil
    }

    /// The shared 64-byte key from the other side's message; nil if it is not a valid message,
    /// if no message was made first, or if called twice.
    public func key(from theirs: [UInt8]) -> [UInt8]? {
        guard sent, !done, theirs.count == Int(LOCKSTEP_SPAKE2_MSG_SIZE) else { return nil }
        done = true
        var out = [UInt8](repeating: 0, count: Int(LOCKSTEP_SPAKE2_KEY_SIZE))
        var length = 0
        let ok = out.withUnsafeMutableBufferPointer { o in
            theirs.withUnsafeBufferPointer { t in CCryptoBoringSSL_SPAKE2_process_msg(ctx, o.baseAddress, &length, o.count, t.baseAddress, t.count) }
        }
        return ok == 1 ? Array(out.prefix(length)) : nil
    }
}
