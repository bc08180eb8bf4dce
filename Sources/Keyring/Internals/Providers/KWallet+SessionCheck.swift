internal import CLibSecret
internal import KeyringShim

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// kwalletd5 (KDE Frameworks 5.103) derives the session key from a shared secret stripped of a
/// leading zero byte, where libsecret keeps all 128 bytes: in 1 of 256 encrypted sessions the two
/// keys differ without any error. Secrets then read as nothing or as garbage, and are written
/// as garbage. After a daemon restart, a libsecret session path left over from the old daemon can
/// even name another client's session in the new one.
///
/// So before a new session first carries a secret with kwalletd5, it reads a check item of known
/// content (a fixed text, not a secret). A write creates the check item when absent; a read never
/// writes: without a check item it compares the item it reads with the same item read through a
/// plain session. A mismatch discards the check item (when this session wrote it) and the session;
/// `ServiceCall.run` then opens a new one. Providers whose `Quirks` rule this out are not checked, and calls that carry
/// no secret (status, search) check nothing.
enum SessionCheck {
    static let sessionCheckAttributes = ["keyring-identity": "session-check"]
    /// Computed: a static Data would show as a leak under LeakSanitizer.
    static var sessionCheckValue: Data { Data("KeyringIdentity session check: not a secret".utf8) }
    static let sessionCheckLabel = "KeyringIdentity session check (not a secret)"

    /// The session last found good, as daemon owner + session path.
    private static let verifiedSession = Guarded<String?>(nil)

    /// Throws `ServiceFailure.sessionKeyRejected` when this session's key is wrong.
    /// - Parameter reading: the item a read is about to decrypt; nil for a write, which may create the check item.
    static func run(_ call: borrowing ServiceCall, reading: String?) throws(KeyringError) {
        guard let pathPointer = secret_service_get_session_dbus_path(call.service) else { return }
        let path = String(cString: pathPointer)
        let algorithms = secret_service_get_session_algorithms(call.service).map { String(cString: $0) } ?? ""
        // Both are known locally: a session already checked costs no call.
        guard algorithms != "plain", let ownerPointer = g_dbus_proxy_get_name_owner(kr_service_proxy(call.service)) else { return }
        let session = String(cString: ownerPointer) + " " + path
        g_free(ownerPointer)
        if Self.verifiedSession.withLock({ $0 == session }) { return }
        guard call.provider().quirks.mayMismatchSessionKeys else {
            Self.verifiedSession.withLock { $0 = session }
            return
        }
        // A few rounds: a check item another process removes between our search and read is searched again.
        for _ in 0..<3 {
            let paths = try call.searchItems(Self.sessionCheckAttributes)
            // Locked: nothing can be read or written through this session until it opens; check then.
            if !paths.locked.isEmpty { return }
            var created = false
            let checkPath: String
            if let first = paths.unlocked.first {
                checkPath = first
            } else if let reading {
                if try agreesWithPlainSession(at: reading, in: call) { Self.verifiedSession.withLock { $0 = session } }
                return
            } else {
                if try call.defaultCollectionState()?.locked != false { return }
                checkPath = try call.insertItem(
                    attributes: Self.sessionCheckAttributes, label: Self.sessionCheckLabel, secret: Self.sessionCheckValue,
                    contentType: "application/octet-stream")
                created = true
            }
            switch try readCheck(at: checkPath, in: call) {
            case .matches:
                Self.verifiedSession.withLock { $0 = session }
                Self.mismatches.withLock { $0 = 0 }
                // Processes that used the wallet for the first time together may each have made one.
                for extra in paths.unlocked.dropFirst() { _ = try? call.deleteItem(at: extra) }
                return
            case .gone: continue
            case .locked: return
            case .differs:
                let count = Self.mismatches.withLock { count in
                    count += 1
                    return count
                }
                // The one we just wrote through this session is garbage. Another's is garbage only
                // when a second session disagrees with it too (it was written through a bad
                // session that did not live to remove it); usually this session is the bad one.
                if created || count >= 2 { _ = try? call.deleteItem(at: checkPath) }
                throw ServiceFailure.sessionKeyRejected.error
            }
        }
    }

    /// Sessions in a row that disagreed with the check item.
    private static let mismatches = Guarded(0)

    private enum CheckRead { case matches, differs, gone, locked }

    private static func readCheck(at path: String, in call: borrowing ServiceCall) throws(KeyringError) -> CheckRead {
        let value: OpaquePointer?
        do throws(KeyringError) {
            value = try call.sessionSecret(at: path)
        } catch let error where ServiceFailure(error) == .noSuchItem {
            return .gone
        }
        defer { if let value { secret_value_unref(UnsafeMutableRawPointer(value)) } }
        var length = 0
        // libsecret gives no value at all when the session key cannot decrypt the secret.
        let bytes = value.flatMap { secret_value_get($0, &length) }.map { Data(bytes: $0, count: length) }
        if bytes == Self.sessionCheckValue { return .matches }
        guard let item = try call.properties(at: path, isLocked: false) else { return .gone }
        return item.isLocked ? .locked : .differs
    }

    /// Whether the item at `path` reads the same through this session as through a plain one.
    /// True also when there is nothing to compare (an empty or locked value, a vanished item, no
    /// plain session): the read then ends as it would have anyway, and a later one checks again.
    /// - Throws: `ServiceFailure.sessionKeyRejected` when the two reads differ.
    private static func agreesWithPlainSession(at path: String, in call: borrowing ServiceCall) throws(KeyringError) -> Bool {
        guard let plain = try plainSecret(at: path, in: call), !plain.isEmpty else { return false }
        let value = try call.sessionSecret(at: path)
        defer { if let value { secret_value_unref(UnsafeMutableRawPointer(value)) } }
        var length = 0
        let bytes = value.flatMap { secret_value_get($0, &length) }.map { Data(bytes: $0, count: length) }
        guard bytes == plain else { throw ServiceFailure.sessionKeyRejected.error }
        return true
    }

    /// The value at `path` through a new plain session, closed afterwards; nil when none opens or the item is gone.
    private static func plainSecret(at path: String, in call: borrowing ServiceCall) throws(KeyringError) -> Data? {
        let opened = try? call.callService(
            "/org/freedesktop/secrets", interface: "org.freedesktop.Secret.Service", method: "OpenSession", kr_open_plain_session_tuple(),
            reply: "(vo)"
        ) { reply -> String? in
            guard let session = kr_open_session_path(reply) else { return nil }
            defer { g_free(session) }
            return String(cString: session)
        }
        guard let session = opened else { return nil }
        defer {
            _ = try? call.callService(session, interface: "org.freedesktop.Secret.Session", method: "Close", nil, reply: "()") { _ in () }
        }
        return try call.callService(
            path, interface: "org.freedesktop.Secret.Item", method: "GetSecret", kr_variant_objpath_tuple(session), reply: "((oayays))"
        ) { reply -> Data? in
            guard let value = kr_get_secret_reply_value(reply) else { return nil }
            defer { g_variant_unref(value) }
            var length = 0
            guard let bytes = g_variant_get_fixed_array(value, &length, 1) else { return Data() }
            return Data(bytes: bytes, count: length)
        }
    }
}
