internal import CLibSecret
internal import KeyringShim

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The fast read of values that are not secrets (identifiers): raw D-Bus calls on the session bus
/// through a `plain` Secret Service session: SearchItems, then (once per connection) OpenSession,
/// then GetSecrets with each item's properties when asked for, in flight together.
///
/// A connection's first call to the service goes alone, and OpenSession only after its reply:
/// gnome-keyring (42 to 50 at least) registers a new client in an idle callback that the client's
/// first calls can outrun when they reach a busy daemon together. SearchItems then fails (GLib
/// criticals, an error reply); OpenSession aborts the daemon (`GLib-ERROR`: g_variant_new was
/// handed NULL), and every app loses its keyring. A call sent after a reply comes after that
/// registration. libsecret's own first call (the service's properties) is as harmless, and it too
/// waits for the reply before OpenSession.
///
/// libsecret's own first call sets up a service proxy (name-owner lookups, activation check,
/// the service's properties) and a Diffie-Hellman session, most of a fresh process's first read.
/// Encryption only hides the value from other processes of the same user on the same bus, which
/// can read the unlocked collection anyway, and an identifier is no secret (see the DocC article
/// "What the Secret Service protects").
///
/// It serves only the plain case: matches found, none locked, every value non-empty. Anything else
/// (no match, a locked or vanished item, a provider error, no service running yet) returns nil,
/// and the caller takes the full path, which tells those cases apart, unlocks, and activates the
/// service. Only a timeout or a cancellation ends the read here.
enum PlainRead {
    /// The session-bus connection, held for the process's life: GLib keeps its shared connection
    /// only while someone holds it, and libsecret, which comes later in the same process, then
    /// shares it instead of connecting again. With the plain session opened on it, once opened.
    private struct Held {
        var connection: UInt = 0
        var session: String?
    }

    private static let held = Guarded(Held())

    /// One match: its object path, its properties (when asked for) and its value.
    struct Match {
        let path: String
        let item: KeyringItem?
        let secret: Data
    }

    /// Every match, oldest first (by path when without properties), or nil for the full path.
    static func read(
        _ attributes: [String: String], withProperties: Bool, until deadline: CallDeadline
    ) throws(KeyringError) -> [Match]? {
        if BusEnvironment.problem() != nil || BusEnvironment.serviceNameProblem() != nil { return nil }
        return try Deadline.run(until: deadline) {
            cancellation throws(KeyringError) -> [Match]? in
            var error: UnsafeMutablePointer<GError>? = nil
            guard let connection = g_bus_get_sync(G_BUS_TYPE_SESSION, cancellation.pointer, &error) else {
                if let error {
                    defer { g_error_free(error) }
                    try throwIfStopping(error, naming: "the session bus")
                }
                return nil
            }
            defer { g_object_unref(UnsafeMutableRawPointer(connection)) }
            hold(connection)
            let context = g_main_context_new()
            g_main_context_push_thread_default(context)
            defer {
                g_main_context_pop_thread_default(context)
                g_main_context_unref(context)
            }
            return try read(attributes, withProperties: withProperties, on: connection, cancellation: cancellation, deadline: deadline)
        }
    }

    private static func read(
        _ attributes: [String: String], withProperties: Bool, on connection: OpaquePointer, cancellation: Cancellation,
        deadline: CallDeadline
    ) throws(KeyringError) -> [Match]? {
        let address = UInt(bitPattern: Int(bitPattern: connection))
        let known = held.withLock { $0.connection == address ? $0.session : nil }

        // Round trip 1: SearchItems alone (see the type's comment).
        let table = kr_string_table_new()
        defer { g_hash_table_unref(table) }
        for (name, value) in attributes { kr_string_table_insert(table, name, value) }
        let search = try Calls(methods: [serviceInterface + ".SearchItems"], deadline: deadline) { calls, milliseconds in
            kr_call_start(
                connection, service, BusCall.servicePath, serviceInterface, "SearchItems", kr_variant_attributes_tuple(table), "(aoao)",
                milliseconds, cancellation.pointer, calls)
        }
        guard let searchReply = search.reply(0) else { return nil }
        guard let (paths, lockedPaths) = ServiceCall.searchPaths(fromReply: searchReply) else {
            throw BusCall.wrongShape("org.freedesktop.Secret.Service.SearchItems")
        }
        guard !paths.isEmpty, lockedPaths.isEmpty else { return nil }

        // Round trip 2, once per connection: OpenSession, after the service has answered this connection.
        let session: String
        if let known {
            session = known
        } else {
            let open = try Calls(methods: [serviceInterface + ".OpenSession"], deadline: deadline) { calls, milliseconds in
                kr_call_start(
                    connection, service, BusCall.servicePath, serviceInterface, "OpenSession", kr_open_plain_session_tuple(), "(vo)",
                    milliseconds, cancellation.pointer, calls)
            }
            guard let reply = open.reply(0), let path = kr_open_session_path(reply) else { return nil }
            session = String(cString: path)
            g_free(path)
            held.withLock { if $0.connection == address { $0.session = session } }
        }

        // Then every secret in one GetSecrets, and each item's properties, all in flight at once.
        let getAll = paths.map { "Properties.GetAll(\($0))" }
        let second = try Calls(methods: [serviceInterface + ".GetSecrets"] + (withProperties ? getAll : []), deadline: deadline) {
            calls, milliseconds in
            let vector = paths.map { strdup($0) } + [nil]
            defer { for pointer in vector { free(pointer) } }
            vector.withUnsafeBufferPointer { buffer in
                buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<gchar>?.self, capacity: buffer.count) { rebound in
                    kr_call_start(
                        connection, service, BusCall.servicePath, serviceInterface, "GetSecrets",
                        kr_variant_paths_session_tuple(rebound, session), "(a{o(oayays)})", milliseconds, cancellation.pointer, calls)
                }
            }
            for (index, path) in paths.enumerated() where withProperties {
                kr_call_start(
                    connection, service, path, "org.freedesktop.DBus.Properties", "GetAll", kr_item_interface_tuple(), "(a{sv})",
                    milliseconds, cancellation.pointer, calls + 1 + index)
            }
        }
        guard let secretsReply = second.reply(0) else {
            // The session may be gone with a restarted daemon: open a new one next time.
            held.withLock { if $0.session == session { $0.session = nil } }
            return nil
        }
        var found: [Match] = []
        for (index, path) in paths.enumerated() {
            var item: KeyringItem?
            if withProperties {
                guard let propertiesReply = second.reply(1 + index) else { return nil }
                guard let read = ServiceCall.item(fromProperties: propertiesReply, at: path, isLocked: false) else {
                    throw BusCall.wrongShape(getAll[index])
                }
                if read.isLocked { return nil }
                item = read
            }
            guard let value = kr_secrets_reply_value(secretsReply, path) else { return nil }
            defer { g_variant_unref(value) }
            var length = 0
            let bytes = g_variant_get_fixed_array(value, &length, 1)
            // An empty value may be KWallet's answer for a locked wallet: the full path tells.
            guard let bytes, length > 0 else { return nil }
            found.append(Match(path: path, item: item, secret: Data(bytes: bytes, count: length)))
        }
        guard withProperties else { return found }
        return found.sorted { ItemOrder.standard.precedes($0.item!, $1.item!) }
    }

    /// Whether libsecret's session at `path` on `connection` has the path of the plain session:
    /// then one of the two was opened on a daemon that has since restarted (two live sessions never
    /// share a path), and a secret encoded for it would be read by the new daemon as the other's.
    /// The plain session is dropped; the caller drops libsecret's.
    static func collides(withSession path: String, on connection: OpaquePointer) -> Bool {
        let address = UInt(bitPattern: Int(bitPattern: connection))
        return held.withLock { held in
            guard held.connection == address, held.session == path else { return false }
            held.session = nil
            return true
        }
    }

    /// Holds `connection` from now on (releasing one held before, a closed bus's), keeping the session only on the same one.
    private static func hold(_ connection: OpaquePointer) {
        let address = UInt(bitPattern: Int(bitPattern: connection))
        held.withLock { held in
            guard held.connection != address else { return }
            g_object_ref(UnsafeMutableRawPointer(connection))
            if let old = UnsafeMutableRawPointer(bitPattern: held.connection) { g_object_unref(old) }
            held = Held(connection: address, session: nil)
        }
    }

    private static var service: String { BusEnvironment.serviceName }
    private static let serviceInterface = "org.freedesktop.Secret.Service"

    /// A cancellation, a timeout or a reply of the wrong shape ends the read; any other error sends
    /// it to the full path.
    private static func throwIfStopping(_ error: UnsafeMutablePointer<GError>, naming name: String) throws(KeyringError) {
        let mapped = BusCall.keyringError(error, naming: name)
        if BusCall.isWrongShape(error) { throw mapped }
        switch mapped {
        case .cancelled, .timedOut: throw mapped
        default: return
        }
    }

    /// Calls in flight together; each one's reply, or nil when it failed. Owns the replies.
    private final class Calls {
        private let calls: UnsafeMutablePointer<KRCall>
        private let count: Int

        /// Starts the calls with `start` (given the call slots and each call's timeout), then
        /// waits for all of them on the thread-default main context. `methods` name the calls, in order.
        init(
            methods: [String], deadline: CallDeadline,
            start: (UnsafeMutablePointer<KRCall>, Int32) -> Void
        ) throws(KeyringError) {
            let count = methods.count
            self.count = count
            calls = .allocate(capacity: count)
            calls.initialize(repeating: KRCall(), count: count)
            start(calls, deadline.remainingMilliseconds)
            kr_calls_wait(g_main_context_get_thread_default(), calls, Int32(count))
            for index in 0..<count {
                if let error = calls[index].error { try throwIfStopping(error, naming: methods[index]) }
            }
        }

        func reply(_ index: Int) -> OpaquePointer? { calls[index].reply }

        deinit {
            for index in 0..<count {
                if let reply = calls[index].reply { g_variant_unref(reply) }
                if let error = calls[index].error { g_error_free(error) }
            }
            calls.deallocate()
        }
    }
}
