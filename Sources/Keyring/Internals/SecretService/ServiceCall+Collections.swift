internal import CLibSecret

/// Lock states of every collection, read straight from the service.
///
/// gnome-keyring and KWallet list a locked collection's items (as locked); KeePassXC hides a
/// locked database's items from every search, and the default alias follows whichever database
/// is active. So on KeePassXC a miss proves an item absent only when no collection is locked
/// (`Quirks.listsLockedMatches`, `missCouldBeHidden`).
extension ServiceCall {
    /// The default collection's path and `Locked` property, read without libsecret's proxies.
    /// - Throws: `.noDefaultCollection` when there is none (or it vanished between the two calls).
    func defaultCollectionLocked() throws(KeyringError) -> (path: String, locked: Bool) {
        guard let path = try defaultCollectionPath(), let locked = try collectionLocked(at: path) else { throw .noDefaultCollection }
        return (path, locked)
    }

    /// The paths of every collection of the service.
    func collections() throws(KeyringError) -> [String] {
        // Never nil: the service object does not "vanish" (`BusCall.callIfPresent`).
        try property("Collections", of: BusCall.servicePath, interface: "org.freedesktop.Secret.Service") { value -> [String]? in
            guard let paths = kr_variant_object_paths(value) else { return nil }
            defer { g_strfreev(paths) }
            return Self.strings(paths)
        } ?? []
    }

    /// The paths of the collections that are locked now. A collection that vanished meanwhile
    /// does not count; a `Collections` or `Locked` that fails or does not parse is a failure, never "unlocked".
    func lockedCollections() throws(KeyringError) -> [String] {
        var locked: [String] = []
        for path in try collections() where try collectionLocked(at: path) == true { locked.append(path) }
        return locked
    }

    /// Every collection's label and lock state, the default first (`Keyring.status()`). One that
    /// vanished meanwhile is left out.
    func collectionStatuses() throws(KeyringError) -> [CollectionStatus] {
        let defaultPath = try defaultCollectionPath()
        var statuses: [CollectionStatus] = []
        for path in try collections() {
            guard let locked = try collectionLocked(at: path),
                let label = try property(
                    "Label", of: path, interface: "org.freedesktop.Secret.Collection",
                    {
                        value -> String? in
                        guard let text = kr_variant_property_string(value) else { return nil }
                        defer { g_free(text) }
                        return String(cString: text)
                    })
            else { continue }
            let status = CollectionStatus(label: label, isLocked: locked, isDefault: path == defaultPath)
            if status.isDefault { statuses.insert(status, at: 0) } else { statuses.append(status) }
        }
        return statuses
    }

    /// The `Locked` property of the collection at `path`; nil when it does not exist.
    func collectionLocked(at path: String) throws(KeyringError) -> Bool? {
        try property("Locked", of: path, interface: "org.freedesktop.Secret.Collection") { value -> Bool? in
            switch kr_variant_boolean(value) {
            case 1: return true
            case 0: return false
            default: return nil
            }
        }
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

    /// Properties.Get of one property, read by `parse` from the `(v)` reply; nil when the object does not exist.
    private func property<T>(_ name: String, of path: String, interface: String, _ parse: (OpaquePointer) -> T?) throws(KeyringError) -> T?
    {
        try callService(
            path, interface: "org.freedesktop.DBus.Properties", method: "Get", kr_variant_two_strings_tuple(interface, name), reply: "(v)",
            naming: "Properties.Get(\(name))", parse)
    }

    /// One call to the Secret Service's owner, straight on the connection, its reply read by
    /// `parse`; nil when the item or collection at `path` does not exist (never for the service
    /// object itself, whose "no such object" is a failure naming the method).
    func callService<T>(
        _ path: String, interface: String, method: String, _ parameters: OpaquePointer?, reply replyType: String,
        naming name: String? = nil,
        _ parse: (OpaquePointer) -> T?
    ) throws(KeyringError) -> T? {
        let proxy = kr_service_proxy(service)
        guard let connection = g_dbus_proxy_get_connection(proxy), let bus = g_dbus_proxy_get_name(proxy) else {
            if let parameters { g_variant_unref(g_variant_ref_sink(parameters)) }
            throw .noSessionBus(detail: "the connection was closed")
        }
        return try BusCall.callIfPresent(
            connection, String(cString: bus), path, interface, method, parameters, reply: replyType, timeout: remainingMilliseconds,
            cancellable: cancellable, naming: name, parse: parse)
    }
}
