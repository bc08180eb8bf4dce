internal import CLibSecret
import Synchronization

/// Remembers which item answered a `SecretStore` read, so a warm read is a single GetSecrets
/// call instead of SearchItems + GetAll + GetSecrets. The secret itself is never cached.
///
/// Correctness rests on Secret Service signals: any signal on the Service or Collection
/// interfaces (item created, deleted or changed, collection locked or unlocked), any
/// PropertiesChanged, and any change of owner of `org.freedesktop.secrets` empties the cache.
/// The service emits a change's signal before it answers later calls, and the bus keeps that
/// order, so signals received by the time a reply arrives cover every change made before it.
/// A read therefore checks for signals after its GetSecrets reply and falls back to a full
/// search if any arrived.
///
/// It is used only with gnome-keyring, whose signals the tests verify.
///
/// All state is touched only inside `ServiceCall.run`, which holds the process-wide gate.
enum ItemPathCache {
    private struct State: ~Copyable {
        var entries: [String: String] = [:]
        /// A private main context that receives the signal callbacks; iterated on each read.
        var context: OpaquePointer?
        /// The subscribed connection, as an address: the Mutex may only hold values it owns.
        var connectionAddress: UInt = 0
        var seenSignals: UInt64 = 0
        /// Only for providers whose signals were verified (gnome-keyring): with a provider that
        /// misses ItemDeleted/ItemCreated, a reused path could name another item.
        /// Decided on the first cache hit, so a process that reads once never asks.
        var enabled: Bool?
    }

    private static let state = Mutex(State())
    /// Bumped by the signal callback; read after iterating the context.
    fileprivate static let signals = Atomic<UInt64>(0)

    /// Delivers pending signals; returns the signal count afterwards, emptying the cache if it moved.
    static func synchronize(_ call: borrowing ServiceCall) -> UInt64 {
        let proxy = kr_service_proxy(call.service)
        guard let connection = g_dbus_proxy_get_connection(proxy) else { return 0 }
        return state.withLock { state in
            let address = UInt(bitPattern: Int(bitPattern: UnsafeMutableRawPointer(connection)))
            if state.connectionAddress != address {
                subscribe(&state, address)
                state.enabled = nil
            }
            while g_main_context_iteration(state.context, 0) != 0 {}
            let now = signals.load(ordering: .acquiring)
            if now != state.seenSignals {
                state.entries.removeAll()
                state.seenSignals = now
            }
            return now
        }
    }

    static func path(for key: String, _ call: borrowing ServiceCall) -> String? {
        state.withLock { state in
            guard let path = state.entries[key] else { return nil }
            if state.enabled == nil { state.enabled = call.providerName() == "gnome-keyring-daemon" }
            return state.enabled == true ? path : nil
        }
    }

    /// Remembers `path` for `key`, unless a signal arrived since `signalCount` was taken.
    static func remember(_ path: String, for key: String, ifNoSignalsSince signalCount: UInt64) {
        state.withLock { state in
            while g_main_context_iteration(state.context, 0) != 0 {}
            guard state.enabled != false, signals.load(ordering: .acquiring) == signalCount else { return }
            state.entries[key] = path
        }
    }

    /// True when no signal arrived since `signalCount` (after delivering pending ones).
    static func isQuiet(since signalCount: UInt64) -> Bool {
        state.withLock { state in
            while g_main_context_iteration(state.context, 0) != 0 {}
            return signals.load(ordering: .acquiring) == signalCount
        }
    }

    static func forget(_ key: String) {
        state.withLock { _ = $0.entries.removeValue(forKey: key) }
    }

    private static func subscribe(_ state: inout State, _ address: UInt) {
        let connection = OpaquePointer(bitPattern: address)
        if state.context == nil { state.context = g_main_context_new() }
        g_main_context_push_thread_default(state.context)
        defer { g_main_context_pop_thread_default(state.context) }
        let subscriptions: [(interface: String, member: String?, arg0: String?)] = [
            ("org.freedesktop.Secret.Service", nil, nil),
            ("org.freedesktop.Secret.Collection", nil, nil),
            ("org.freedesktop.DBus.Properties", "PropertiesChanged", nil),
            ("org.freedesktop.DBus", "NameOwnerChanged", "org.freedesktop.secrets"),
        ]
        for subscription in subscriptions {
            _ = g_dbus_connection_signal_subscribe(
                connection, nil, subscription.interface, subscription.member, nil, subscription.arg0,
                G_DBUS_SIGNAL_FLAGS_NONE, { _, _, _, _, _, _, _ in ItemPathCache.signals.add(1, ordering: .releasing) },
                nil, nil)
        }
        // Keep the connection alive while subscribed; release the one before it.
        g_object_ref(UnsafeMutableRawPointer(bitPattern: address))
        if let old = UnsafeMutableRawPointer(bitPattern: state.connectionAddress) { g_object_unref(old) }
        state.connectionAddress = address
        state.entries.removeAll()
    }
}
