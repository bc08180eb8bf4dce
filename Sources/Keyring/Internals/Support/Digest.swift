internal import CLibSecret

/// GLib's SHA-256 and HMAC-SHA256, for DeviceIdentity (checksums, the app-specific machine ID) and
/// for lock names, so that only Keyring's internals touch C. Package API, not public.
package enum Digest {
    /// SHA-256 of `bytes` as 64 lowercase hex digits.
    /// - Parameter bytes: the input.
    /// - Returns: the hex digest.
    package static func sha256Hex(_ bytes: [UInt8]) -> String {
        let raw = bytes.withUnsafeBufferPointer { g_compute_checksum_for_data(G_CHECKSUM_SHA256, $0.baseAddress, gsize($0.count)) }
        guard let raw else { return "" }
        defer { g_free(raw) }
        return String(cString: raw)
    }

    /// HMAC-SHA256 of `message` keyed by `key`: 32 bytes.
    /// - Parameters:
    ///   - key: the key bytes.
    ///   - message: the message bytes.
    /// - Returns: the 32-byte digest, or nil when GLib cannot make an HMAC.
    package static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8]? {
        let hmac = key.withUnsafeBufferPointer { g_hmac_new(G_CHECKSUM_SHA256, $0.baseAddress, gsize($0.count)) }
        guard let hmac else { return nil }
        defer { g_hmac_unref(hmac) }
        message.withUnsafeBufferPointer { g_hmac_update(hmac, $0.baseAddress, gssize($0.count)) }
        var digest = [UInt8](repeating: 0, count: 32)
        var length = gsize(digest.count)
        g_hmac_get_digest(hmac, &digest, &length)
        return digest
    }
}
