internal import CLibSecret
internal import KeyringShim

/// Reads of collections (`org.freedesktop.Secret.Collection`): the service's Collections property
/// and each collection's Locked and Label.
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

    /// True when a search's miss does not prove absence: the provider hides a locked collection's
    /// items and some collection is locked. On gnome-keyring and KWallet a miss is always proven.
    func missCouldBeHidden() throws(KeyringError) -> Bool {
        if provider().quirks.listsLockedMatches { return false }
        return try !lockedCollections().isEmpty
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

    /// The default collection's label and lock state, or nil when there is no default collection.
    func defaultCollectionState() throws(KeyringError) -> (label: String, locked: Bool)? {
        try withDefaultCollection { collection throws(KeyringError) in
            let label = secret_collection_get_label(collection)
            defer { g_free(label) }
            return (label.map { String(cString: $0) } ?? "", secret_collection_get_locked(collection) != 0)
        }
    }

    private func withDefaultCollection<T>(
        _ body: (UnsafeMutablePointer<SecretCollection>) throws(KeyringError) -> T
    ) throws(KeyringError) -> T? {
        let collection = try throwingGError {
            secret_collection_for_alias_sync(service, SECRET_COLLECTION_DEFAULT, SECRET_COLLECTION_NONE, cancellable, $0)
        }
        guard let collection else { return nil }
        defer { g_object_unref(collection) }
        return try body(collection)
    }
}
