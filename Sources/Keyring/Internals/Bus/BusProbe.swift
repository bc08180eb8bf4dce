internal import CLibSecret

/// Questions `idtool doctor` asks the session bus directly, without libsecret, to explain why the
/// Secret Service cannot be used. Package API, not public.
package enum BusProbe {
    /// True when `name` has an owner on the session bus, or the bus can activate it.
    /// - Parameter name: a well-known bus name, e.g. `org.kde.kwalletd5`.
    /// - Returns: false too when the bus cannot be reached.
    package static func isAvailable(_ name: String) -> Bool {
        guard let connection = sessionBus() else { return false }
        defer { g_object_unref(UnsafeMutableRawPointer(connection)) }
        for method in ["ListNames", "ListActivatableNames"] {
            guard let reply = call(connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", method, nil)
            else { continue }
            defer { g_variant_unref(reply) }
            if kr_variant_tuple_strings_contains(reply, name) != 0 { return true }
        }
        return false
    }

    /// True when the Secret Service opens a session without encryption ("plain"). When the
    /// encrypted one fails and this works, the provider's Diffie-Hellman is broken (KWallet
    /// without its QCA plugin).
    package static func opensPlainSession() -> Bool {
        guard let connection = sessionBus() else { return false }
        defer { g_object_unref(UnsafeMutableRawPointer(connection)) }
        guard
            let reply = call(
                connection, "org.freedesktop.secrets", "/org/freedesktop/secrets", "org.freedesktop.Secret.Service",
                "OpenSession", kr_open_plain_session_tuple())
        else { return false }
        defer { g_variant_unref(reply) }
        guard let path = kr_open_session_path(reply) else { return false }
        defer { g_free(path) }
        if let closed = call(connection, "org.freedesktop.secrets", String(cString: path), "org.freedesktop.Secret.Session", "Close", nil) {
            g_variant_unref(closed)
        }
        return true
    }

    private static func sessionBus() -> OpaquePointer? {
        if BusEnvironment.problem() != nil { return nil }
        var error: UnsafeMutablePointer<GError>? = nil
        let connection = g_bus_get_sync(G_BUS_TYPE_SESSION, nil, &error)
        if let error { g_error_free(error) }
        return connection
    }

    private static func call(
        _ connection: OpaquePointer, _ name: String, _ path: String, _ interface: String, _ method: String, _ parameters: OpaquePointer?
    ) -> OpaquePointer? {
        var error: UnsafeMutablePointer<GError>? = nil
        let reply = g_dbus_connection_call_sync(
            connection, name, path, interface, method, parameters, nil, G_DBUS_CALL_FLAGS_NO_AUTO_START, 2000, nil, &error)
        if let error { g_error_free(error) }
        return reply
    }
}
