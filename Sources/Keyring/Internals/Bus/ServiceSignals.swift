internal import CLibSecret
internal import KeyringShim
import Synchronization

/// The one subscription to the Secret Service's signals, for the path cache (`ItemPathCache`) and
/// for change notifications (`ChangeWatch`).
///
/// The signals are matched on the bus by sender (the service's unique name, replaced when the
/// owner changes), so nobody else's reach this process, and seen by a connection filter on GDBus's
/// worker thread as they arrive: each one bumps a counter and is handed to the listeners, which
/// only copy it into a bounded buffer of their own. Nothing is queued on a main context, so an app
/// that reads once and then idles holds no backlog, however busy the bus.
///
/// Match rules stay once added (one set per owner): the path cache needs them for the process's life.
enum ServiceSignals {
    /// One signal, as the filter copied it.
    struct Signal: Sendable {
        let interface: String
        let member: String
        /// The object that sent it (a collection for ItemCreated, an item for PropertiesChanged).
        let path: String
        /// The item of ItemCreated/ItemChanged/ItemDeleted, the collection of CollectionCreated/…; nil otherwise.
        let object: String?
        /// For NameOwnerChanged of `org.freedesktop.secrets`: the new owner ("" for none).
        let newOwner: String?
    }

    private struct State: ~Copyable {
        /// The subscribed connection, as an address: the lock may only hold values it owns.
        var connectionAddress: UInt = 0
        var filter: guint = 0
        /// The owner the match rules name ("" for none).
        var ruleOwner = ""
        /// Whether the service's owner was learnt since subscribing. Until it is, no rules match its signals.
        var ownerKnown = false
    }

    private static let state = Guarded(State())
    /// Bumped by the filter for each signal that counts.
    fileprivate static let count = Atomic<UInt64>(0)
    /// The unique name of the service's owner whose signals count; the filter follows NameOwnerChanged
    /// and bumps `generation`, so an answer to GetNameOwner older than the filter's news is dropped.
    fileprivate static let owner = Guarded((name: "", generation: UInt64(0)))
    /// Who is handed each signal; each must return at once (it runs on GDBus's worker thread).
    private static let listeners = Guarded((next: UInt64(0), all: [UInt64: @Sendable (Signal) -> Void]()))

    /// Subscribes `call`'s connection when it is not yet, learns the owner when it is not known,
    /// and follows a change of owner.
    /// - Returns: the signal count, whether the owner is known, and whether a new subscription began.
    static func synchronize(_ call: borrowing ServiceCall) -> (count: UInt64, ownerKnown: Bool, subscribed: Bool) {
        let proxy = kr_service_proxy(call.service)
        guard let connection = g_dbus_proxy_get_connection(proxy) else { return (0, false, false) }
        return state.withLock { state in
            let address = UInt(bitPattern: Int(bitPattern: UnsafeMutableRawPointer(connection)))
            var subscribed = false
            if state.connectionAddress != address {
                subscribe(&state, address, call)
                subscribed = true
            } else if !state.ownerKnown {
                learnOwner(&state, connection, call)
            }
            follow(&state)
            return (count.load(ordering: .acquiring), state.ownerKnown, subscribed)
        }
    }

    /// After a NameOwnerChanged: match the new owner's signals instead of the old one's. Needs no
    /// round trip (the rules are sent without awaiting replies), so a listener may call it from its queue.
    static func followOwner() {
        state.withLock { follow(&$0) }
    }

    /// The signal count now.
    static var signalCount: UInt64 { count.load(ordering: .acquiring) }

    /// The last items this process created, by path, under the owner that holds them. A watch
    /// reads a created item only after the signal, through the same in-process gate as the
    /// writer, so this process's own create and delete in a row could leave it nothing to read.
    private static let madeHere = Guarded((owner: "", items: [String: KeyringItem](), order: [String]()))
    private static let madeHereLimit = 64

    /// Notes an item this process just created (nothing while no watch knows the owner).
    static func noteCreated(_ item: KeyringItem) {
        let current = owner.withLock { $0.name }
        guard !current.isEmpty else { return }
        madeHere.withLock { made in
            if made.owner != current { made = (current, [:], []) }
            if made.items.updateValue(item, forKey: item.objectPath) == nil { made.order.append(item.objectPath) }
            if made.order.count > madeHereLimit { made.items[made.order.removeFirst()] = nil }
        }
    }

    /// The item this process created at `path` under the current owner, if it is among the last ones.
    static func createdHere(_ path: String) -> KeyringItem? {
        let current = owner.withLock { $0.name }
        return madeHere.withLock { $0.owner == current ? $0.items[path] : nil }
    }

    /// Hands every later signal to `listener`, until `removeListener` with the returned key.
    static func addListener(_ listener: @escaping @Sendable (Signal) -> Void) -> UInt64 {
        listeners.withLock { listeners in
            listeners.next &+= 1
            listeners.all[listeners.next] = listener
            return listeners.next
        }
    }

    static func removeListener(_ key: UInt64) {
        _ = listeners.withLock { $0.all.removeValue(forKey: key) }
    }

    /// How many listeners are registered (a leak test counts them).
    static var listenerCount: Int { listeners.withLock { $0.all.count } }

    private static func follow(_ state: inout State) {
        guard let connection = OpaquePointer(bitPattern: state.connectionAddress) else { return }
        let current = owner.withLock { $0.name }
        if current != state.ruleOwner { replaceRules(&state, connection, current) }
    }

    private static let ownerChangedRule =
        "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(BusEnvironment.serviceName)'"

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
        state.filter = g_dbus_connection_add_filter(connection, seeServiceSignals, nil, nil)
        // Before the owner is asked, so that a change of owner after the answer is seen.
        addMatch(connection, ownerChangedRule)
        learnOwner(&state, connection, call)
    }

    /// Asks the bus who owns the service. A failed answer leaves the owner unknown (the next
    /// synchronize asks again): no rule then matches its signals.
    /// The answer is stored only if no NameOwnerChanged reached the filter meanwhile: that one is newer.
    private static func learnOwner(_ state: inout State, _ connection: OpaquePointer, _ call: borrowing ServiceCall) {
        let generation = owner.withLock { $0.generation }
        // Asked of the bus, not libsecret's proxy, whose idea of the owner may lag a restart.
        guard let current = try? call.nameOwner(BusEnvironment.serviceName, on: connection) else { return }
        owner.withLock { if $0.generation == generation { $0.name = current } }
        state.ownerKnown = true
        count.add(1, ordering: .releasing)
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
    }

    private static func addMatch(_ connection: OpaquePointer, _ rule: String) {
        BusCall.send(
            connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "AddMatch", kr_variant_string_tuple(rule))
    }

    /// The incoming signal when it is one of the Secret Service's, or a change of its owner (which it follows).
    fileprivate static func signal(of message: OpaquePointer) -> Signal? {
        let sender = g_dbus_message_get_sender(message).map { String(cString: $0) } ?? ""
        let interface = g_dbus_message_get_interface(message).map { String(cString: $0) } ?? ""
        let member = g_dbus_message_get_member(message).map { String(cString: $0) } ?? ""
        let path = g_dbus_message_get_path(message).map { String(cString: $0) } ?? ""
        if sender == "org.freedesktop.DBus", interface == "org.freedesktop.DBus", member == "NameOwnerChanged" {
            guard g_dbus_message_get_arg0(message).map({ strcmp($0, BusEnvironment.serviceName) == 0 }) == true,
                let newOwner = kr_name_owner_changed_new_owner(message)
            else { return nil }
            defer { g_free(newOwner) }
            let name = String(cString: newOwner)
            owner.withLock { $0 = (name, $0.generation &+ 1) }
            return Signal(interface: interface, member: member, path: path, object: nil, newOwner: name)
        }
        guard !sender.isEmpty, owner.withLock({ $0.name == sender }) else { return nil }
        switch interface {
        case "org.freedesktop.Secret.Service", "org.freedesktop.Secret.Collection":
            // ItemCreated (o), CollectionChanged (o) and the rest carry one object path.
            let object = kr_variant_tuple_objpath(g_dbus_message_get_body(message))
            defer { g_free(object) }
            return Signal(interface: interface, member: member, path: path, object: object.map { String(cString: $0) }, newOwner: nil)
        case "org.freedesktop.DBus.Properties" where member == "PropertiesChanged":
            return Signal(interface: interface, member: member, path: path, object: nil, newOwner: nil)
        default: return nil
        }
    }

    fileprivate static func deliver(_ signal: Signal) {
        count.add(1, ordering: .releasing)
        let all = listeners.withLock { Array($0.all.values) }
        for listener in all { listener(signal) }
    }
}

/// Runs on GDBus's worker thread for every message of the connection; passes each one on untouched.
private let seeServiceSignals: GDBusMessageFilterFunction = { _, message, incoming, _ in
    guard let message, kr_message_is_incoming_signal(message, incoming) != 0 else { return message }
    if let signal = ServiceSignals.signal(of: message) { ServiceSignals.deliver(signal) }
    return message
}
