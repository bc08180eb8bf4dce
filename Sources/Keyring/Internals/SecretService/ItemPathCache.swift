internal import CLibSecret
import Synchronization

/// Remembers which item answered a `SecretStore` read, so a warm read is a single GetSecrets
/// call instead of SearchItems + GetAll + GetSecrets. The secret itself is never cached.
///
/// Correctness rests on Secret Service signals: any signal on the Service or Collection
/// interfaces (item created, deleted or changed, collection locked or unlocked), any
/// PropertiesChanged from the service, and any change of owner of `org.freedesktop.secrets`
/// empties the cache. The service emits a change's signal before it answers later calls, and the
/// bus keeps that order, so signals received by the time a reply arrives cover every change made
/// before it. A read therefore checks for signals after its GetSecrets reply and falls back to a
/// full search if any arrived.
///
/// The signals are matched on the bus by sender (the service's unique name, replaced when the
/// owner changes), so nobody else's reach this process, and counted by a connection filter on
/// GDBus's worker thread as they arrive: nothing is queued for later, so an app that reads once
/// and then idles holds no backlog, however busy the bus.
///
/// It is used only with gnome-keyring, whose signals the tests verify.
///
/// All state but the counter and the sender is touched only inside `ServiceCall.run`, which holds
/// the process-wide gate.
enum ItemPathCache {
    private struct State: ~Copyable {
        var entries: [String: String] = [:]
        /// The subscribed connection, as an address: the Mutex may only hold values it owns.
        var connectionAddress: UInt = 0
        var filter: guint = 0
        /// The owner the match rules name ("" for none).
        var ruleOwner = ""
        /// Whether the service's owner was learnt since subscribing. Until it is, no rules match its
        /// signals, so nothing is served or remembered; each read asks again.
        var ownerKnown = false
        var seenSignals: UInt64 = 0
        /// Only for providers whose signals were verified (gnome-keyring): with a provider that
        /// misses ItemDeleted/ItemCreated, a reused path could name another item.
        /// Decided on the first cache hit, so a process that reads once never asks.
        var enabled: Bool?
    }

    private static let state = Mutex(State())
    /// Bumped by the filter for each signal that counts.
    fileprivate static let signals = Atomic<UInt64>(0)
    /// The unique name of the service's owner whose signals count; the filter follows NameOwnerChanged
    /// and bumps `generation`, so an answer to GetNameOwner older than the filter's news is dropped.
    fileprivate static let owner = Mutex((name: "", generation: UInt64(0)))

    /// Returns the signal count, emptying the cache if it moved; subscribes first when needed.
    static func synchronize(_ call: borrowing ServiceCall) -> UInt64 {
        let proxy = kr_service_proxy(call.service)
        guard let connection = g_dbus_proxy_get_connection(proxy) else { return 0 }
        return state.withLock { state in
            let address = UInt(bitPattern: Int(bitPattern: UnsafeMutableRawPointer(connection)))
            if state.connectionAddress != address {
                subscribe(&state, address, call)
                state.enabled = nil
            } else if !state.ownerKnown {
                learnOwner(&state, connection, call)
            }
            let current = owner.withLock { $0.name }
            if current != state.ruleOwner { replaceRules(&state, connection, current) }
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
            guard state.ownerKnown, let path = state.entries[key] else { return nil }
            if state.enabled == nil { state.enabled = call.providerName() == "gnome-keyring-daemon" }
            return state.enabled == true ? path : nil
        }
    }

    /// Remembers `path` for `key`, unless a signal arrived since `signalCount` was taken.
    static func remember(_ path: String, for key: String, ifNoSignalsSince signalCount: UInt64) {
        state.withLock { state in
            guard state.ownerKnown, state.enabled != false, signals.load(ordering: .acquiring) == signalCount else { return }
            state.entries[key] = path
        }
    }

    /// True when no signal arrived since `signalCount`.
    static func isQuiet(since signalCount: UInt64) -> Bool {
        signals.load(ordering: .acquiring) == signalCount
    }

    static func forget(_ key: String) {
        state.withLock { _ = $0.entries.removeValue(forKey: key) }
    }

    private static let ownerChangedRule =
        "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='org.freedesktop.secrets'"

    /// The rules for one owner's signals (none for no owner).
    private static func rules(for owner: String) -> [String] {
        guard !owner.isEmpty else { return [] }
        return [
            "type='signal',sender='\(owner)',interface='org.freedesktop.Secret.Service'",
            "type='signal',sender='\(owner)',interface='org.freedesktop.Secret.Collection'",
            "type='signal',sender='\(owner)',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'",
        ]
    }

    private static func subscribe(_ state: inout State, _ address: UInt, _ call: borrowing ServiceCall) {
        let connection = OpaquePointer(bitPattern: address)!
        if let old = OpaquePointer(bitPattern: state.connectionAddress) {
            g_dbus_connection_remove_filter(old, state.filter)
            g_object_unref(UnsafeMutableRawPointer(old))
        }
        // Keep the connection alive while subscribed.
        g_object_ref(UnsafeMutableRawPointer(connection))
        state.connectionAddress = address
        state.ruleOwner = ""
        state.ownerKnown = false
        state.filter = g_dbus_connection_add_filter(connection, countServiceSignals, nil, nil)
        // Before the owner is asked, so that a change of owner after the answer is seen.
        addMatch(connection, ownerChangedRule)
        learnOwner(&state, connection, call)
    }

    /// Asks the bus who owns the service. A failed answer leaves the cache off (the next read asks
    /// again): with no owner known, no rule matches its signals, and nothing could invalidate it.
    /// The answer is stored only if no NameOwnerChanged reached the filter meanwhile: that one is newer.
    private static func learnOwner(_ state: inout State, _ connection: OpaquePointer, _ call: borrowing ServiceCall) {
        let generation = owner.withLock { $0.generation }
        // Asked of the bus, not libsecret's proxy, whose idea of the owner may lag a restart.
        let current = try? BusCall.call(
            connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner",
            kr_variant_string_tuple("org.freedesktop.secrets"), reply: "(s)", timeout: call.remainingMilliseconds,
            cancellable: call.cancellable, flags: G_DBUS_CALL_FLAGS_NONE
        ) { reply -> String? in
            guard let name = kr_variant_tuple_string(reply) else { return nil }
            defer { g_free(name) }
            return String(cString: name)
        }
        state.entries.removeAll()
        guard let current else { return }
        owner.withLock { if $0.generation == generation { $0.name = current } }
        state.ownerKnown = true
        signals.add(1, ordering: .releasing)
    }

    /// Matches the signals of `current` instead of those of the owner before it. The rules are sent
    /// without awaiting replies: the bus applies them before any later call of this connection.
    private static func replaceRules(_ state: inout State, _ connection: OpaquePointer, _ current: String) {
        for rule in rules(for: state.ruleOwner) {
            BusCall.send(
                connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RemoveMatch",
                kr_variant_string_tuple(rule))
        }
        for rule in rules(for: current) { addMatch(connection, rule) }
        state.ruleOwner = current
        state.entries.removeAll()
    }

    private static func addMatch(_ connection: OpaquePointer, _ rule: String) {
        BusCall.send(
            connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "AddMatch", kr_variant_string_tuple(rule))
    }

    /// Whether an incoming signal is one of the Secret Service's, or a change of its owner (which it follows).
    fileprivate static func counts(_ message: OpaquePointer) -> Bool {
        let sender = g_dbus_message_get_sender(message).map { String(cString: $0) } ?? ""
        let interface = g_dbus_message_get_interface(message).map { String(cString: $0) } ?? ""
        let member = g_dbus_message_get_member(message).map { String(cString: $0) } ?? ""
        if sender == "org.freedesktop.DBus", interface == "org.freedesktop.DBus", member == "NameOwnerChanged" {
            guard g_dbus_message_get_arg0(message).map({ strcmp($0, "org.freedesktop.secrets") == 0 }) == true,
                let newOwner = kr_name_owner_changed_new_owner(message)
            else { return false }
            defer { g_free(newOwner) }
            let name = String(cString: newOwner)
            owner.withLock { $0 = (name, $0.generation &+ 1) }
            return true
        }
        guard !sender.isEmpty, owner.withLock({ $0.name == sender }) else { return false }
        switch interface {
        case "org.freedesktop.Secret.Service", "org.freedesktop.Secret.Collection": return true
        case "org.freedesktop.DBus.Properties": return member == "PropertiesChanged"
        default: return false
        }
    }
}

/// Runs on GDBus's worker thread for every message of the connection; passes each one on untouched.
private let countServiceSignals: GDBusMessageFilterFunction = { _, message, incoming, _ in
    guard let message, kr_message_is_incoming_signal(message, incoming) != 0 else { return message }
    if ItemPathCache.counts(message) { ItemPathCache.signals.add(1, ordering: .releasing) }
    return message
}
