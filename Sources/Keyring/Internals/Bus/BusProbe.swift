internal import CLibSecret
internal import KeyringShim

/// Questions `idtool doctor` asks the session bus directly, without libsecret, to explain why the
/// Secret Service cannot be used. Package API, not public.
package enum BusProbe {
    /// True when `name` has an owner on the session bus, or the bus can activate it.
    /// - Parameter name: a well-known bus name, e.g. `org.kde.kwalletd5`.
    /// - Returns: false too when the bus cannot be reached.
    package static func isAvailable(_ name: String) -> Bool { availability(name) == true }

    /// Whether `name` has an owner on the session bus or the bus can activate it; nil when the bus
    /// does not answer, so that a caller can tell "nobody serves it" from "the bus is gone".
    package static func availability(_ name: String) -> Bool? { listed(name, by: ["ListNames", "ListActivatableNames"]) }

    /// Whether `name` has an owner on the session bus now (a running daemon, not one the bus could
    /// start); nil when the bus does not answer.
    package static func hasOwner(_ name: String) -> Bool? { listed(name, by: ["ListNames"]) }

    /// Whether any of the bus's `methods` (ListNames, ListActivatableNames) lists `name`.
    private static func listed(_ name: String, by methods: [String]) -> Bool? {
        guard let connection = sessionBus() else { return nil }
        defer { g_object_unref(UnsafeMutableRawPointer(connection)) }
        for method in methods {
            let listed = call(
                connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", method, nil, reply: "(as)"
            ) {
                kr_variant_tuple_strings_contains($0, name) != 0
            }
            guard let listed else { return nil }
            if listed { return true }
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
            let path = call(
                connection, BusEnvironment.serviceName, "/org/freedesktop/secrets", "org.freedesktop.Secret.Service",
                "OpenSession", kr_open_plain_session_tuple(), reply: "(vo)",
                { reply -> String? in
                    guard let path = kr_open_session_path(reply) else { return nil }
                    defer { g_free(path) }
                    return String(cString: path)
                })
        else { return false }
        _ = call(connection, BusEnvironment.serviceName, path, "org.freedesktop.Secret.Session", "Close", nil, reply: "()") { _ in () }
        return true
    }

    /// The executable name of the process that owns `name` on the session bus, e.g. `kwalletd6`.
    /// - Parameter name: a well-known bus name, e.g. `org.freedesktop.secrets`.
    /// - Returns: nil when the name has no owner or the bus cannot be reached.
    package static func processName(of name: String) -> String? {
        guard let connection = sessionBus() else { return nil }
        defer { g_object_unref(UnsafeMutableRawPointer(connection)) }
        guard
            let pid = call(
                connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetConnectionUnixProcessID",
                kr_variant_string_tuple(name), reply: "(u)", { kr_variant_tuple_u32($0) }),
            pid > 0
        else { return nil }
        return ProcessName.of(pid: pid)
    }

    /// The Secret Service's bus name this process uses (`SECRET_SERVICE_BUS_NAME`, else org.freedesktop.secrets).
    package static var secretServiceName: String { BusEnvironment.serviceName }

    private static func sessionBus() -> OpaquePointer? {
        if BusEnvironment.problem() != nil || BusEnvironment.serviceNameProblem() != nil { return nil }
        var error: UnsafeMutablePointer<GError>? = nil
        let connection = g_bus_get_sync(G_BUS_TYPE_SESSION, nil, &error)
        if let error { g_error_free(error) }
        return connection
    }

    /// One call with a short timeout; nil on any error.
    private static func call<T>(
        _ connection: OpaquePointer, _ name: String, _ path: String, _ interface: String, _ method: String, _ parameters: OpaquePointer?,
        reply replyType: String, _ parse: (OpaquePointer) -> T?
    ) -> T? {
        try? BusCall.call(
            connection, name, path, interface, method, parameters, reply: replyType, timeout: 2000, cancellable: nil, parse: parse)
    }
}
