internal import CLibSecret
import Synchronization

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
/// So before a new session is used with kwalletd5, it reads a check item of known content (a
/// fixed text, not a secret), creating it when absent. A mismatch discards the check item and
/// the session; `ServiceCall.run` then opens a new one. Other providers are not checked.
extension ServiceCall {
    static let sessionCheckAttributes = ["keyring-identity": "session-check"]
    /// Computed: a static Data would show as a leak under LeakSanitizer.
    static var sessionCheckValue: Data { Data("KeyringIdentity session check: not a secret".utf8) }
    static let sessionCheckLabel = "KeyringIdentity session check (not a secret)"
    /// The message of the error that makes `ServiceCall.run` retry on a new session.
    static let sessionKeyMismatch = "the session's encryption key does not match kwalletd5's"

    /// The session last found good, as daemon owner + session path.
    private static let verifiedSession = Mutex<String?>(nil)

    /// Throws a `.serviceFailure` with `sessionKeyMismatch` when this session's key is wrong.
    func checkSession() throws(KeyringError) {
        guard let pathPointer = secret_service_get_session_dbus_path(service) else { return }
        let path = String(cString: pathPointer)
        let algorithms = secret_service_get_session_algorithms(service).map { String(cString: $0) } ?? ""
        // Both are known locally: a session already checked costs no call.
        guard algorithms != "plain", let ownerPointer = g_dbus_proxy_get_name_owner(kr_service_proxy(service)) else { return }
        let session = String(cString: ownerPointer) + " " + path
        g_free(ownerPointer)
        if Self.verifiedSession.withLock({ $0 == session }) { return }
        guard let owner = secretServiceOwner(), owner.isKWallet else {
            Self.verifiedSession.withLock { $0 = session }
            return
        }
        let paths = try searchPaths(Self.sessionCheckAttributes)
        // Locked: nothing can be read or written through this session until it opens; check then.
        if !paths.locked.isEmpty { return }
        var checkPath = paths.unlocked.first
        var created = false
        if checkPath == nil {
            if try defaultCollectionState()?.locked != false { return }
            checkPath = try createItem(
                attributes: Self.sessionCheckAttributes, label: Self.sessionCheckLabel, secret: Self.sessionCheckValue,
                contentType: "application/octet-stream")
            created = true
        }
        guard let checkPath else { return }
        let value = try throwingGError { secret_service_get_secret_for_dbus_path_sync(service, checkPath, cancellable, $0) }
        defer { if let value { secret_value_unref(UnsafeMutableRawPointer(value)) } }
        var length = 0
        let bytes = value.flatMap { secret_value_get($0, &length) }.map { Data(bytes: $0, count: length) }
        if bytes == Self.sessionCheckValue {
            Self.verifiedSession.withLock { $0 = session }
            return
        }
        if bytes?.isEmpty == true, try properties(at: checkPath, isLocked: false)?.isLocked != false { return }
        // Either this session or the check item is bad (written through a bad session that
        // did not live to remove it): remove them all; the next session writes a new one.
        for stale in created ? [checkPath] : paths.unlocked { try? deleteItem(at: stale) }
        throw .serviceFailure(domain: "KeyringIdentity", code: -1, message: Self.sessionKeyMismatch)
    }
}
