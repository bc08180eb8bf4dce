internal import CLibSecret
internal import KeyringShim

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Reads on the Secret Service object (`org.freedesktop.Secret.Service`): ReadAlias, SearchItems
/// and GetSecrets. Each is sent straight on the connection, so it shares the call's deadline.
extension ServiceCall {
    /// ReadAlias("default"): the default collection's real path, or nil when the service has none
    /// ("/"). The real path: not every provider accepts the alias path in Lock and Unlock. A failed
    /// call throws: only "/" means none.
    func defaultCollectionPath() throws(KeyringError) -> String? {
        let path = try callService(
            servicePath, interface: serviceInterface, method: "ReadAlias", kr_variant_string_tuple("default"), reply: "(o)"
        ) { reply -> String? in
            guard let path = kr_variant_tuple_objpath(reply) else { return nil }
            defer { g_free(path) }
            return String(cString: path)
        }
        return path == "/" ? nil : path
    }

    /// SearchItems, sent straight on the connection so that it can stop short of the deadline.
    ///
    /// KeePassXC with `UnlockBeforeSearch=true` (its default) answers a search only after an
    /// unlock dialog while a database is locked; headless or unattended, nobody answers it. So the
    /// search gets the time left minus a reserve, and when it runs out, the collections' `Locked`
    /// property (which KeePassXC still answers) tells "locked" from "did not answer".
    func searchItems(_ attributes: [String: String]) throws(KeyringError) -> (unlocked: [String], locked: [String]) {
        let proxy = kr_service_proxy(service)
        guard let connection = g_dbus_proxy_get_connection(proxy), let bus = g_dbus_proxy_get_name(proxy) else {
            throw .noSessionBus(detail: BusCall.connectionClosed)
        }
        let table = kr_string_table_new()
        defer { g_hash_table_unref(table) }
        for (name, value) in attributes { kr_string_table_insert(table, name, value) }
        let total = remainingMilliseconds
        let reserve = min(2000, total / 5)
        notes.paths = []
        // Before the search: a database unlocked between its answer and a create must still count.
        if notes.mayCreate { notes.searchedWhileHidden = try missCouldBeHidden() }
        do throws(KeyringError) {
            let paths = try BusCall.call(
                connection, String(cString: bus), "/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "SearchItems",
                kr_variant_attributes_tuple(table), reply: "(aoao)", timeout: max(1, total - reserve), cancellable: cancellable,
                parse: Self.searchPaths(fromReply:))
            // An unlock this call asks for then opens the collections that hold them (`unlockTargets`).
            notes.paths = paths.locked
            return paths
        } catch .timedOut(let seconds) {
            if g_cancellable_is_cancelled(cancellable) == 0, try !lockedCollections().isEmpty { throw .locked(itemExists: false) }
            throw .timedOut(seconds: seconds)
        }
    }

    /// The unlocked and locked paths of a SearchItems reply, `(aoao)`; nil for another shape.
    static func searchPaths(fromReply reply: OpaquePointer?) -> (unlocked: [String], locked: [String])? {
        var unlocked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>? = nil
        var locked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>? = nil
        kr_search_reply(reply, &unlocked, &locked)
        defer {
            g_strfreev(unlocked)
            g_strfreev(locked)
        }
        guard unlocked != nil, locked != nil else { return nil }
        return (strings(unlocked), strings(locked))
    }

    /// The value at `path` as libsecret's session delivers it (a `SecretValue` to unref), or nil
    /// when the service returned none or the session key cannot decrypt it.
    ///
    /// A raw GetSecrets that libsecret decodes, not `secret_service_get_secret_for_dbus_path_sync`:
    /// libsecret 0.20.5 (Debian 12) never frees that call's reply (fixed in 0.21.2, commit
    /// 92705b5), so every read there leaked the encoded secret, about 5 KiB for a 4 KiB value.
    func sessionSecret(at path: String) throws(KeyringError) -> OpaquePointer? {
        _ = try throwingGError { secret_service_ensure_session_sync(service, cancellable, $0) }
        guard let session = secret_service_get_session_dbus_path(service) else {
            throw .serviceFailure(domain: "libsecret", code: -1, message: "no Secret Service session is open to read the value")
        }
        let proxy = kr_service_proxy(service)
        guard let connection = g_dbus_proxy_get_connection(proxy) else { throw .noSessionBus(detail: BusCall.connectionClosed) }
        // To the daemon that holds the session, as libsecret's own call goes to its proxy's owner:
        // after a restart that name is gone (a stale connection, retried on a new session), where
        // the well-known name would reach the new daemon and perhaps another session at this path.
        // With no owner known, the well-known name, as libsecret's proxy would.
        let daemon =
            sessionDaemon
            ?? g_dbus_proxy_get_name_owner(proxy).map { owner in
                defer { g_free(owner) }
                return String(cString: owner)
            } ?? BusEnvironment.serviceName
        return try BusCall.call(
            connection, daemon, servicePath, serviceInterface, "GetSecrets", kr_variant_path_session_tuple(path, session),
            reply: "(a{o(oayays)})", timeout: remainingMilliseconds, cancellable: cancellable
        ) { reply -> OpaquePointer?? in
            // An item that vanished has no entry (gnome-keyring); that is no value, not a wrong shape.
            guard let entry = kr_secrets_reply_entry(reply, path) else { return .some(nil) }
            defer { g_variant_unref(entry) }
            return .some(secret_service_decode_dbus_secret(service, entry))
        }
    }

    var servicePath: String { BusCall.servicePath }
    var serviceInterface: String { "org.freedesktop.Secret.Service" }
}
