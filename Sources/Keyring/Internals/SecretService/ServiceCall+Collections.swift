internal import CLibSecret

/// Lock states of every collection, read straight from the service.
///
/// gnome-keyring lists a locked collection's items (as locked); KeePassXC hides a locked
/// database's items from every search, and the default alias follows whichever database is
/// active. So a miss proves an item absent only when no collection at all is locked.
extension ServiceCall {
    /// True when any collection of the service is locked. A collection that vanished meanwhile
    /// does not count.
    func anyCollectionLocked() throws(KeyringError) -> Bool {
        guard let reply = try property("Collections", of: "/org/freedesktop/secrets", interface: "org.freedesktop.Secret.Service")
        else { return false }
        defer { g_variant_unref(reply) }
        let paths = kr_variant_object_paths(reply)
        defer { g_strfreev(paths) }
        for path in Self.strings(paths) {
            guard let locked = try property("Locked", of: path, interface: "org.freedesktop.Secret.Collection") else { continue }
            defer { g_variant_unref(locked) }
            if kr_variant_boolean(locked) == 1 { return true }
        }
        return false
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
            throw .noSessionBus(detail: "the connection was closed")
        }
        let table = kr_string_table_new()!
        defer { g_hash_table_unref(table) }
        for (name, value) in attributes { kr_string_table_insert(table, name, value) }
        let total = remainingMilliseconds
        let reserve = min(2000, total / 5)
        var error: UnsafeMutablePointer<GError>? = nil
        let reply = g_dbus_connection_call_sync(
            connection, bus, "/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "SearchItems",
            kr_variant_attributes_tuple(table), nil, G_DBUS_CALL_FLAGS_NO_AUTO_START, max(1, total - reserve), cancellable, &error)
        if let error {
            let failure = KeyringError(gError: error, phase: .talking)
            g_error_free(error)
            if case .timedOut = failure, g_cancellable_is_cancelled(cancellable) == 0, try anyCollectionLocked() {
                throw .locked(itemExists: false)
            }
            throw failure
        }
        defer { g_variant_unref(reply) }
        return Self.searchPaths(fromReply: reply)
    }

    /// The unlocked and locked paths of a SearchItems reply (both empty for another shape).
    static func searchPaths(fromReply reply: OpaquePointer?) -> (unlocked: [String], locked: [String]) {
        var unlocked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>? = nil
        var locked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>? = nil
        kr_search_reply(reply, &unlocked, &locked)
        defer {
            g_strfreev(unlocked)
            g_strfreev(locked)
        }
        return (strings(unlocked), strings(locked))
    }

    /// Properties.Get of one property; nil when the object does not exist.
    private func property(_ name: String, of path: String, interface: String) throws(KeyringError) -> OpaquePointer? {
        try callService(path, interface: "org.freedesktop.DBus.Properties", method: "Get", kr_variant_two_strings_tuple(interface, name))
    }

    /// One call to the Secret Service's owner, straight on the connection; nil when the object
    /// does not exist. The caller owns the reply.
    func callService(_ path: String, interface: String, method: String, _ parameters: OpaquePointer?) throws(KeyringError) -> OpaquePointer?
    {
        let proxy = kr_service_proxy(service)
        guard let connection = g_dbus_proxy_get_connection(proxy), let bus = g_dbus_proxy_get_name(proxy) else {
            if let parameters { g_variant_unref(g_variant_ref_sink(parameters)) }
            throw .noSessionBus(detail: "the connection was closed")
        }
        var error: UnsafeMutablePointer<GError>? = nil
        let reply = g_dbus_connection_call_sync(
            connection, bus, path, interface, method, parameters, nil, G_DBUS_CALL_FLAGS_NO_AUTO_START, remainingMilliseconds, cancellable,
            &error)
        if let error {
            defer { g_error_free(error) }
            if Self.isNoSuchObject(error) { return nil }
            throw KeyringError(gError: error, phase: .talking)
        }
        return reply
    }
}
