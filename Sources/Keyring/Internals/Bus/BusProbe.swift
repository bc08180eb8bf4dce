internal import CLibSecret
internal import KeyringShim

/// Questions asked of the session bus directly, without libsecret: by `idtool doctor`, to explain
/// why the Secret Service cannot be used, and by `ServiceCall` before libsecret connects. Package
/// API, not public.
///
/// Every probe ends by a deadline, connection included: a frozen bus (its dbus-daemon stopped)
/// accepts the socket and then answers nothing, and `g_bus_get_sync` without a cancellable waits
/// for it for ever.
package enum BusProbe {
    /// How long `idtool doctor`'s probes wait for the bus, each.
    package static let doctorTimeout: Duration = .seconds(2)

    /// True when `name` has an owner on the session bus, or the bus can activate it.
    /// - Parameter name: a well-known bus name, e.g. `org.kde.kwalletd5`.
    /// - Returns: false too when the bus cannot be reached.
    package static func isAvailable(_ name: String) -> Bool { availability(name) == true }

    /// Whether `name` has an owner on the session bus or the bus can activate it; nil when the bus
    /// does not answer, so that a caller can tell "nobody serves it" from "the bus is gone".
    package static func availability(_ name: String) -> Bool? {
        probe(until: CallDeadline(timeout: doctorTimeout)) { listed(name, by: ["ListNames", "ListActivatableNames"], on: $0) }
    }

    /// Whether `name` has an owner on the session bus now (a running daemon, not one the bus could
    /// start); nil when the bus does not answer.
    package static func hasOwner(_ name: String) -> Bool? {
        probe(until: CallDeadline(timeout: doctorTimeout)) { listed(name, by: ["ListNames"], on: $0) }
    }

    /// As `availability` (or, with `activatable` false, `hasOwner`), within a call's own deadline
    /// and cancellation: nil when the bus did not answer in time.
    static func lists(
        _ name: String, activatable: Bool, until deadline: CallDeadline, cancellation: Cancellation
    ) -> Bool? {
        probe(until: deadline, cancellation: cancellation) {
            listed(name, by: activatable ? ["ListNames", "ListActivatableNames"] : ["ListNames"], on: $0)
        }
    }

    /// True when the Secret Service opens a session without encryption ("plain"). When the
    /// encrypted one fails and this works, the provider's Diffie-Hellman is broken (KWallet
    /// without its QCA plugin).
    package static func opensPlainSession() -> Bool {
        probe(until: CallDeadline(timeout: doctorTimeout)) { bus -> Bool? in
            guard
                let path = bus.call(
                    BusEnvironment.serviceName, "/org/freedesktop/secrets", "org.freedesktop.Secret.Service",
                    "OpenSession", kr_open_plain_session_tuple(), reply: "(vo)",
                    { reply -> String? in
                        guard let path = kr_open_session_path(reply) else { return nil }
                        defer { g_free(path) }
                        return String(cString: path)
                    })
            else { return false }
            _ = bus.call(BusEnvironment.serviceName, path, "org.freedesktop.Secret.Session", "Close", nil, reply: "()") { _ in () }
            return true
        } ?? false
    }

    /// The executable name of the process that owns `name` on the session bus, e.g. `kwalletd6`.
    /// - Parameter name: a well-known bus name, e.g. `org.freedesktop.secrets`.
    /// - Returns: nil when the name has no owner or the bus cannot be reached.
    package static func processName(of name: String) -> String? {
        processName(of: name, until: CallDeadline(timeout: doctorTimeout))
    }

    /// As above, within `deadline` (a failed call's, to name the daemon in its error).
    static func processName(of name: String, until deadline: CallDeadline, cancellation: Cancellation? = nil) -> String? {
        probe(until: deadline, cancellation: cancellation) { bus -> String? in
            guard
                let pid = bus.call(
                    "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetConnectionUnixProcessID",
                    kr_variant_string_tuple(name), reply: "(u)", { kr_variant_tuple_u32($0) }),
                pid > 0
            else { return nil }
            return ProcessName.of(pid: pid)
        }
    }

    /// The Secret Service's bus name this process uses (`SECRET_SERVICE_BUS_NAME`, else org.freedesktop.secrets).
    package static var secretServiceName: String { BusEnvironment.serviceName }

    /// Whether any of the bus's `methods` (ListNames, ListActivatableNames) lists `name`.
    private static func listed(_ name: String, by methods: [String], on bus: Bus) -> Bool? {
        for method in methods {
            let listed = bus.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", method, nil, reply: "(as)") {
                kr_variant_tuple_strings_contains($0, name) != 0
            }
            guard let listed else { return nil }
            if listed { return true }
        }
        return false
    }

    /// The session bus connection and what is left of the probe's deadline.
    private struct Bus {
        let connection: OpaquePointer
        let deadline: CallDeadline
        let cancellable: UnsafeMutablePointer<GCancellable>

        /// One call within the deadline; nil on any error.
        func call<T>(
            _ name: String, _ path: String, _ interface: String, _ method: String, _ parameters: OpaquePointer?,
            reply replyType: String, _ parse: (OpaquePointer) -> T?
        ) -> T? {
            try? BusCall.call(
                connection, name, path, interface, method, parameters, reply: replyType, timeout: deadline.remainingMilliseconds,
                cancellable: cancellable, parse: parse)
        }
    }

    /// Connects to the session bus and runs `body`, all by `deadline`; nil when there is no bus,
    /// it does not answer in time, or `body` gives nil.
    private static func probe<T>(
        until deadline: CallDeadline, cancellation: Cancellation? = nil, _ body: (Bus) -> T?
    ) -> T? {
        if BusEnvironment.problem() != nil || BusEnvironment.serviceNameProblem() != nil { return nil }
        return try? Deadline.run(until: deadline, cancellation: cancellation) { cancellation throws(KeyringError) -> T? in
            var error: UnsafeMutablePointer<GError>? = nil
            guard let connection = g_bus_get_sync(G_BUS_TYPE_SESSION, cancellation.pointer, &error) else {
                if let error { g_error_free(error) }
                return nil
            }
            defer { g_object_unref(UnsafeMutableRawPointer(connection)) }
            return body(Bus(connection: connection, deadline: deadline, cancellable: cancellation.pointer))
        }
    }
}
