internal import CLibSecret
internal import KeyringShim

/// The one home of D-Bus method calls sent straight on a connection (libsecret's own calls aside).
///
/// Every call names the reply type it expects, so GDBus itself refuses a reply of another shape
/// (with G_IO_ERROR_INVALID_ARGUMENT); that, and a reply `parse` cannot read, is a `.serviceFailure`
/// that names the method, never an empty result. Errors are mapped here, once.
enum BusCall {
    /// Calls `method` and returns its parsed reply.
    /// - Parameters:
    ///   - parameters: the call's arguments, consumed if floating.
    ///   - replyType: the reply's D-Bus signature, e.g. `(aoao)`.
    ///   - name: how a failure names the call; `interface.method` by default.
    ///   - answer: turns particular errors into a value instead of throwing (never a wrong shape).
    ///   - parse: reads the reply (freed here); nil means the reply has an unexpected shape.
    static func call<T>(
        _ connection: OpaquePointer, _ destination: String?, _ path: String, _ interface: String, _ method: String,
        _ parameters: OpaquePointer?, reply replyType: String, timeout milliseconds: Int32,
        cancellable: UnsafeMutablePointer<GCancellable>?, flags: GDBusCallFlags = kr_call_flags_no_auto_start(),
        naming name: String? = nil, orOnError answer: (UnsafeMutablePointer<GError>) -> T? = { _ in nil },
        parse: (OpaquePointer) -> T?
    ) throws(KeyringError) -> T {
        let name = name ?? "\(interface).\(method)"
        do throws(KeyringError) {
            try requireObjectPath(path, naming: "the object path of \(name)")
        } catch {
            if let parameters { g_variant_unref(g_variant_ref_sink(parameters)) }
            throw error
        }
        let type = g_variant_type_new(replyType)
        defer { g_variant_type_free(type) }
        var error: UnsafeMutablePointer<GError>? = nil
        let reply = g_dbus_connection_call_sync(
            connection, destination, path, interface, method, parameters, type, flags, milliseconds, cancellable, &error)
        if let error {
            defer { g_error_free(error) }
            if !isWrongShape(error), let value = answer(error) { return value }
            throw keyringError(error, naming: name)
        }
        guard let reply else { throw wrongShape(name) }
        defer { g_variant_unref(reply) }
        guard let value = parse(reply) else { throw wrongShape(name) }
        return value
    }

    /// Throws `.invalidArgument` unless `path` is a D-Bus object path, before any GLib call sees it:
    /// GLib's builders answer another string with a critical and NULL. For paths from a caller (an
    /// item of another backend, say); those in replies and signals are checked by their D-Bus type.
    static func requireObjectPath(_ path: String, naming what: String) throws(KeyringError) {
        // A NUL would end the C string early, and "/\0x" pass as "/".
        guard path.utf8.contains(0) || g_variant_is_object_path(path) == 0 else { return }
        throw .invalidArgument("\(what), \"\(AttributeRules.printable(path))\", is not a D-Bus object path")
    }

    /// As `call`, for an item or collection that may have gone: nil when the service says no object
    /// is at `path`. The service object itself never counts as gone: its "no such object" is a
    /// failure that names the method, never an empty answer (no collection locked, no default one).
    static func callIfPresent<T>(
        _ connection: OpaquePointer, _ destination: String?, _ path: String, _ interface: String, _ method: String,
        _ parameters: OpaquePointer?, reply replyType: String, timeout milliseconds: Int32,
        cancellable: UnsafeMutablePointer<GCancellable>?, naming name: String? = nil, parse: (OpaquePointer) -> T?
    ) throws(KeyringError) -> T? {
        try call(
            connection, destination, path, interface, method, parameters, reply: replyType, timeout: milliseconds,
            cancellable: cancellable, naming: name,
            orOnError: { error -> T?? in path != servicePath && isNoSuchObject(error) ? .some(nil) : nil },
            parse: { reply -> T?? in parse(reply).map { .some($0) } })
    }

    /// Sends a call whose reply nobody waits for (a prompt's Dismiss, a match rule).
    static func send(
        _ connection: OpaquePointer, _ destination: String?, _ path: String, _ interface: String, _ method: String,
        _ parameters: OpaquePointer?
    ) {
        // With no callback GDBus marks the message NO_REPLY_EXPECTED.
        g_dbus_connection_call(
            connection, destination, path, interface, method, parameters, nil, kr_call_flags_no_auto_start(), -1, nil, nil, nil)
        g_dbus_connection_flush(connection, nil, nil, nil)
    }

    /// The typed error for a failed call: a wrong shape names the method; the rest map as GErrors do.
    static func keyringError(_ error: UnsafeMutablePointer<GError>, naming name: String) -> KeyringError {
        if isWrongShape(error) { return wrongShape(name) }
        let mapped = KeyringError(gError: error, phase: .talking)
        // A method, interface or object the service does not have (where that is not a vanished item) is named too.
        if KeyringError.remoteName(of: error).map(unanswered.contains) == true,
            case .serviceFailure(let domain, let code, let message) = mapped
        {
            return .serviceFailure(domain: domain, code: code, message: "the service does not answer \(name): \(message)")
        }
        return mapped
    }

    /// GDBus's answer to a reply whose type is not the one asked for (a local error, not the peer's).
    /// The errors of a call the service does not answer at all, which a failure names.
    private static let unanswered: Set<String> = [
        "org.freedesktop.DBus.Error.UnknownMethod", "org.freedesktop.DBus.Error.UnknownInterface",
        "org.freedesktop.DBus.Error.UnknownObject", "org.freedesktop.Secret.Error.NoSuchObject",
    ]

    /// The Secret Service's own object, which exists whenever the service does.
    static let servicePath = "/org/freedesktop/secrets"

    static func isWrongShape(_ error: UnsafeMutablePointer<GError>) -> Bool {
        error.pointee.domain == kr_io_error_quark() && error.pointee.code == Int32(G_IO_ERROR_INVALID_ARGUMENT.rawValue)
            && KeyringError.remoteName(of: error) == nil
    }

    static func wrongShape(_ name: String) -> KeyringError {
        .serviceFailure(domain: "KeyringIdentity", code: -1, message: "the service's reply to \(name) has an unexpected shape")
    }

    /// The detail of `.noSessionBus` when this process's connection closed under a call.
    static let connectionClosed = "the connection was closed"

    /// "No such object" in the forms gnome-keyring, KWallet, KeePassXC and the bus use, for an item's or
    /// collection's path (`callIfPresent` never asks it of the service object). GDBus (gnome-keyring)
    /// answers a path with no object on it with UnknownMethod, worded "Object does not exist at path …"
    /// (a subtree, as gnome-keyring's items are) or, where nothing at all handles the path, "No such
    /// interface … on object at path …"; any other UnknownMethod is a failure, not a vanished object.
    static func isNoSuchObject(_ error: UnsafeMutablePointer<GError>) -> Bool {
        guard let name = KeyringError.remoteName(of: error) else { return false }
        let message = error.pointee.message.map { String(cString: $0) } ?? ""
        switch name {
        case "org.freedesktop.DBus.Error.UnknownObject", "org.freedesktop.Secret.Error.NoSuchObject": return true
        case "org.freedesktop.DBus.Error.UnknownMethod":
            return message.contains("Object does not exist at path") || message.contains("on object at path")
        case "org.freedesktop.DBus.Error.InvalidArgs": return message.contains(ServiceFailure.kwalletNoSuchItem)
        default: return false
        }
    }
}
