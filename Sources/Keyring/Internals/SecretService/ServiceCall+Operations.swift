internal import CLibSecret

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The libsecret calls the public types are built from. Each runs inside a `ServiceCall`, so
/// it shares that call's cancellable and deadline. Every C object is freed right where it is made.
extension ServiceCall {
    /// All items matching `attributes`, locked ones included, oldest first.
    ///
    /// One SearchItems call, then one Properties.GetAll per match, sent straight on the connection:
    /// libsecret's SecretItem proxies would add a name-owner lookup and activation check per item.
    func search(_ attributes: [String: String]) throws(KeyringError) -> [KeyringItem] {
        let paths = try searchPaths(attributes)
        var items: [KeyringItem] = []
        for (list, isLocked) in [(paths.unlocked, false), (paths.locked, true)] {
            for path in list {
                // An item deleted between the search and this call is simply not there any more.
                if let item = try properties(at: path, isLocked: isLocked) { items.append(item) }
            }
        }
        return ItemOrder.standard.sorted(items)
    }

    /// The object paths of matching items, unlocked and locked: one SearchItems call, which
    /// reports a locked collection rather than wait out the deadline (see `searchItems`).
    func searchPaths(_ attributes: [String: String]) throws(KeyringError) -> (unlocked: [String], locked: [String]) {
        try searchItems(attributes)
    }

    /// The item's attributes, label and dates, or nil when it no longer exists. A reply that lacks
    /// any of them is a failure: read as an item with no dates, it would count as the oldest.
    func properties(at path: String, isLocked: Bool) throws(KeyringError) -> KeyringItem? {
        try callService(
            path, interface: "org.freedesktop.DBus.Properties", method: "GetAll", kr_item_interface_tuple(), reply: "(a{sv})",
            naming: "Properties.GetAll(\(path))"
        ) { reply in Self.item(fromProperties: reply, at: path, isLocked: isLocked) }
    }

    /// The item described by a Properties.GetAll reply of the item at `path`; nil when malformed.
    static func item(fromProperties reply: OpaquePointer?, at path: String, isLocked: Bool) -> KeyringItem? {
        var properties = KRItemProperties()
        guard kr_item_properties(reply, &properties) != 0 else { return nil }
        defer {
            g_hash_table_unref(properties.attributes)
            g_free(properties.label)
        }
        return KeyringItem(
            objectPath: path,
            attributes: Self.dictionary(properties.attributes),
            label: properties.label.map { String(cString: $0) } ?? "",
            isLocked: isLocked || properties.locked != 0,
            created: properties.created == 0 ? nil : Date(timeIntervalSince1970: Double(properties.created)),
            modified: properties.modified == 0 ? nil : Date(timeIntervalSince1970: Double(properties.modified)))
    }

    static func strings(_ vector: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?) -> [String] {
        var result: [String] = []
        var cursor = vector
        while let current = cursor, let string = current.pointee {
            result.append(String(cString: string))
            cursor = current + 1
        }
        return result
    }

    static func dictionary(_ table: OpaquePointer?) -> [String: String] {
        guard let table else { return [:] }
        var result: [String: String] = [:]
        var iterator = GHashTableIter()
        g_hash_table_iter_init(&iterator, table)
        var key: gpointer? = nil
        var value: gpointer? = nil
        while g_hash_table_iter_next(&iterator, &key, &value) != 0 {
            guard let key, let value else { continue }
            result[String(cString: key.assumingMemoryBound(to: CChar.self))] = String(cString: value.assumingMemoryBound(to: CChar.self))
        }
        return result
    }

    /// The path where `item`, from an earlier search, is now; nil when it is gone. Where the
    /// provider renumbers its items on a start (KWallet), the item at the old path must still have
    /// the same attributes and creation time, else it is looked up again by those; elsewhere the
    /// path stands.
    func currentPath(of item: KeyringItem) throws(KeyringError) -> String? {
        guard !item.isLocked, !item.attributes.isEmpty, provider().quirks.renumbersItems else { return item.objectPath }
        func isSame(_ other: KeyringItem) -> Bool { other.attributes == item.attributes && other.created == item.created }
        if let now = try properties(at: item.objectPath, isLocked: false), now.isLocked || isSame(now) { return item.objectPath }
        let found = try search(item.attributes).filter(isSame)
        return found.count == 1 ? found[0].objectPath : nil
    }

    /// The secret bytes of the item at `path`, and their content type; nil when the service
    /// returned none (the item vanished, or is locked: the caller tells which).
    ///
    /// An empty secret is a value only when the item is unlocked: KWallet answers GetSecret on a
    /// locked wallet with success and an empty secret, which then throws `.locked`; and only when
    /// it was written empty: one marked non-empty lost its value (`.valueLost`, ksecretd).
    func secret(at path: String) throws(KeyringError) -> (bytes: Data, contentType: String)? {
        try checkSession(reading: path)
        let value: OpaquePointer?
        do throws(KeyringError) {
            value = try sessionSecret(at: path)
        } catch .serviceFailure(_, _, let message) where message.contains(BusCall.kwalletNoSuchItem) {
            // gnome-keyring answers GetSecrets for a vanished item with no secret; kwalletd5 with an error.
            return nil
        }
        guard let value else { return nil }
        defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
        var length: Int = 0
        let bytes = secret_value_get(value, &length)
        let data = bytes.map { Data(bytes: $0, count: length) } ?? Data()
        let contentType = secret_value_get_content_type(value).map { String(cString: $0) } ?? ""
        if data.isEmpty {
            guard let item = try properties(at: path, isLocked: false) else { return nil }
            if item.isLocked { throw lockedError(at: [path]) }
            if ProviderAttributes.marksNonEmpty(item.attributes) { throw .valueLost(path: path) }
        }
        return (data, contentType)
    }

    /// The value at `path` as libsecret's session delivers it (a `SecretValue` to unref), or nil
    /// when the service returned none or the session key cannot decrypt it.
    ///
    /// A raw GetSecrets that libsecret decodes, not `secret_service_get_secret_for_dbus_path_sync`:
    /// libsecret 0.20.5 (Debian 12) never frees that call's reply (fixed in 0.21.2, commit
    /// 92705b5), so every read there leaked the encoded secret, about 5 KiB for a 4 KiB value.
    func sessionSecret(at path: String) throws(KeyringError) -> OpaquePointer? {
        _ = try throwingGError { secret_service_ensure_session_sync(service, cancellable, $0) }
        guard let session = secret_service_get_session_dbus_path(service) else {
            throw .serviceFailure(domain: "libsecret", code: -1, message: "no Secret Service session is open to read the value")
        }
        let proxy = kr_service_proxy(service)
        guard let connection = g_dbus_proxy_get_connection(proxy) else { throw .noSessionBus(detail: "the connection was closed") }
        // To the daemon that holds the session, as libsecret's own call goes to its proxy's owner:
        // after a restart that name is gone (a stale connection, retried on a new session), where
        // the well-known name would reach the new daemon and perhaps another session at this path.
        // With no owner known, the well-known name, as libsecret's proxy would.
        let daemon =
            sessionDaemon
            ?? g_dbus_proxy_get_name_owner(proxy).map { owner in
                defer { g_free(owner) }
                return String(cString: owner)
            } ?? BusEnvironment.serviceName
        return try BusCall.call(
            connection, daemon, servicePath, serviceInterface, "GetSecrets", kr_variant_path_session_tuple(path, session),
            reply: "(a{o(oayays)})", timeout: remainingMilliseconds, cancellable: cancellable
        ) { reply -> OpaquePointer?? in
            // An item that vanished has no entry (gnome-keyring); that is no value, not a wrong shape.
            guard let entry = kr_secrets_reply_entry(reply, path) else { return .some(nil) }
            defer { g_variant_unref(entry) }
            return .some(secret_service_decode_dbus_secret(service, entry))
        }
    }

    /// The secret at `path`, or nil when it cannot be read for any reason but cancellation, a
    /// timeout, or a session that `run` replaces and retries on (a session key kwalletd does not
    /// share): swallowing that one would leave the bad session in place for the next read.
    func secretIfReadable(at path: String) throws(KeyringError) -> (bytes: Data, contentType: String)? {
        do throws(KeyringError) {
            return try secret(at: path)
        } catch {
            switch error {
            case .cancelled, .timedOut: throw error
            case _ where Self.isRetriedOnNewSession(error): throw error
            default: return nil
            }
        }
    }

    /// The secret at `path`; nil when the item no longer exists. When the service returns no
    /// secret for an item that still exists, the item is locked.
    func secretOfExistingItem(at path: String) throws(KeyringError) -> (bytes: Data, contentType: String)? {
        if let secret = try secret(at: path) { return secret }
        guard let now = try properties(at: path, isLocked: false) else { return nil }
        if now.isLocked { throw lockedError(at: [path]) }
        throw .serviceFailure(domain: "libsecret", code: -1, message: "the service returned no secret for an unlocked item")
    }

    /// For a read that found no readable item: locked matches, or a miss that a locked collection
    /// may hide (KeePassXC hides a locked database's items), throw `.locked`, so a locked item
    /// never reads as absent. Where the provider lists locked matches (gnome-keyring, KWallet),
    /// a miss is absent whatever else is locked: a user's old second keyring left locked must not
    /// make every new item `.locked`.
    func throwIfLockedMiss(_ matches: [KeyringItem]) throws(KeyringError) {
        try throwIfAnyLocked(matches)
        // Hidden: nothing names where, so the unlock asks for every locked collection.
        if try missCouldBeHidden() { throw lockedError(at: [], itemExists: false) }
    }

    /// True when the item at `path`, which no longer answers, may only be hidden by a locked
    /// collection rather than deleted: its own collection is gone or locked, and the provider hides
    /// locked items. An item whose unlocked collection still exists is deleted.
    func itemCouldBeHidden(at path: String) throws(KeyringError) -> Bool {
        if provider().quirks.listsLockedMatches { return false }
        if let slash = path.lastIndex(of: "/"), try collectionLocked(at: String(path[..<slash])) == false { return false }
        return try !lockedCollections().isEmpty
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

    /// Creates an item in the default collection. It never uses libsecret's replace flag, which
    /// would also overwrite items whose attributes merely include these. Returns its object path.
    ///
    /// Raw calls (ReadAlias, the collection's Locked, CreateItem) where libsecret's collection and
    /// item proxies would add six more messages; a prompt the service asks for is run, as
    /// libsecret would, within this call's deadline.
    @discardableResult
    func createItem(
        attributes: [String: String], label: String, secret: Data, contentType: String
    ) throws(KeyringError) -> String {
        try refuseValueTheProviderRejects(secret)
        // Every caller searched first and found nothing: where a locked collection may hide the
        // item (KeePassXC), a new one would become a twin that loses to it after the unlock.
        var hidden = notes.searchedWhileHidden
        if !hidden { hidden = try missCouldBeHidden() }
        if hidden { throw lockedError(at: [], itemExists: false) }
        try checkSession(reading: nil)
        let sent = provider().quirks.savesValuesLate ? ProviderAttributes.marked(attributes, nonEmpty: !secret.isEmpty) : attributes
        let path = try insertItem(attributes: sent, label: label, secret: secret, contentType: contentType)
        let now = Date()
        ServiceSignals.noteCreated(
            KeyringItem(objectPath: path, attributes: attributes, label: label, isLocked: false, created: now, modified: now))
        return path
    }

    /// `createItem` without the session check, for the check item itself.
    func insertItem(attributes: [String: String], label: String, secret: Data, contentType: String) throws(KeyringError) -> String {
        // Without a default collection libsecret would ask the service to create one, which prompts.
        // Only a ReadAlias answering "/" means "none": a failed one throws (`callService`).
        guard
            let collectionPath = try callService(
                servicePath, interface: serviceInterface, method: "ReadAlias", kr_variant_string_tuple("default"), reply: "(o)",
                {
                    reply -> String? in
                    guard let path = kr_variant_tuple_objpath(reply) else { return nil }
                    defer { g_free(path) }
                    return String(cString: path)
                }),
            collectionPath != "/"
        else { throw .noDefaultCollection }
        guard let locked = try collectionLocked(at: collectionPath) else { throw Self.vanished("Properties.Get(Locked)") }
        if locked { throw lockedError(at: [collectionPath], itemExists: false) }

        try requireCurrentSession()
        let table = makeTable(attributes)
        defer { g_hash_table_unref(table) }
        let value = makeValue(secret, contentType: contentType)
        defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
        guard let encoded = secret_service_encode_dbus_secret(service, value) else {
            throw .serviceFailure(domain: "libsecret", code: -1, message: "the value could not be encoded for the session")
        }
        guard
            let (itemPath, promptPath) = try callService(
                collectionPath, interface: "org.freedesktop.Secret.Collection", method: "CreateItem",
                kr_create_item_tuple(label, table, encoded), reply: "(oo)",
                {
                    reply -> (String, String)? in
                    var item: UnsafeMutablePointer<gchar>? = nil
                    var prompt: UnsafeMutablePointer<gchar>? = nil
                    kr_create_item_reply(reply, &item, &prompt)
                    defer {
                        g_free(item)
                        g_free(prompt)
                    }
                    guard let item, let prompt else { return nil }
                    return (String(cString: item), String(cString: prompt))
                })
        else { throw Self.vanished("CreateItem") }
        var created = itemPath
        if created == "/", promptPath != "/" {
            let result = try throwingGError {
                secret_service_prompt_at_dbus_path_sync(service, promptPath, cancellable, kr_variant_type_objpath(), $0)
            }
            // A prompt that was dismissed returns no result.
            guard let result else { throw .locked(itemExists: false, unlock: .dismissed) }
            defer { g_variant_unref(result) }
            created =
                kr_variant_objpath(result).map { pointer in
                    defer { g_free(pointer) }
                    return String(cString: pointer)
                } ?? "/"
        }
        guard created != "/" else { throw .serviceFailure(domain: "libsecret", code: -1, message: "the service created no item") }
        flushAfterWrite()
        return created
    }

    /// The secret of the oldest match. A single unlocked match (the usual case) is read with
    /// SearchItems + GetSecrets, as libsecret's own lookup does; only several matches need each
    /// item's properties to choose.
    func lookup(_ attributes: [String: String]) throws(KeyringError) -> Data? {
        let paths = try searchPaths(attributes)
        if paths.unlocked.count == 1, paths.locked.isEmpty,
            let (bytes, _) = try secret(at: paths.unlocked[0])
        {
            return bytes
        }
        return try readFirst(try search(attributes))?.bytes
    }

    /// Updates the item whose attributes are exactly `attributes`; false when there is none.
    func updateExactly(
        _ attributes: [String: String], secret: Data, contentType: String, label: String
    ) throws(KeyringError) -> Bool {
        // gnome-keyring stamps schema-less items with xdg:schema=org.freedesktop.Secret.Generic;
        // unless the caller names a schema, that stamp is not part of the comparison.
        // KeePassXC adds Title, Uuid, Path and others to every item; those the caller did not
        // name are not part of the comparison either.
        let comparable: ([String: String]) -> [String: String] = { item in
            let own = ProviderAttributes.withoutAdded(item, keeping: Set(attributes.keys))
            return attributes["xdg:schema"] == nil ? own.filter { $0.key != "xdg:schema" } : own
        }
        let found = try search(attributes)
        // A locked match whose attributes cannot be read may be the exact item: creating beside it
        // would make a twin. gnome-keyring shows a keyring loaded locked from disk with hashed
        // attributes (`gkr:compat:hashed:service`, …): the search matched, but not these names.
        let unreadable = { (item: KeyringItem) in !attributes.allSatisfy { item.attributes[$0.key] == $0.value } }
        try throwIfAnyLocked(found.filter { $0.isLocked && (unreadable($0) || comparable($0.attributes) == attributes) })
        let exact = found.filter { comparable($0.attributes) == attributes }
        guard let item = exact.first else { return false }
        try updateItem(at: item.objectPath, secret: (secret, contentType), label: label)
        return true
    }

    /// The oldest item's secret. Any locked match throws `.locked`, even when a younger match is
    /// readable: a locked original must never lose to a readable twin. A miss that a locked
    /// collection may hide (KeePassXC) throws `.locked` too, rather than read as absent. An item deleted between the
    /// search and the read (a concurrent reset) is skipped, not reported as locked.
    func readFirst(
        _ items: [KeyringItem], order: ItemOrder = .standard
    ) throws(KeyringError) -> (item: KeyringItem, bytes: Data, contentType: String)? {
        try throwIfAnyLocked(items)
        var remaining = items
        for item in order.sorted(items) {
            if let (bytes, contentType) = try secretOfExistingItem(at: item.objectPath) { return (item, bytes, contentType) }
            remaining.removeAll { $0.objectPath == item.objectPath }
        }
        try throwIfLockedMiss(remaining)
        return nil
    }

    /// The default collection ReadAlias named was gone by `method`: a failure, not "no default
    /// collection", which would let a caller keep a new value elsewhere as if the keyring had none.
    private static func vanished(_ method: String) -> KeyringError {
        .serviceFailure(domain: "KeyringIdentity", code: -1, message: "the default collection vanished between ReadAlias and \(method)")
    }

    private var servicePath: String { BusCall.servicePath }
    private var serviceInterface: String { "org.freedesktop.Secret.Service" }

    /// Changes the parts of an existing item that are given; the others stay as they are.
    func updateItem(
        at path: String, secret: (Data, contentType: String)? = nil, label: String? = nil, attributes: [String: String]? = nil
    ) throws(KeyringError) {
        if let (bytes, _) = secret {
            try refuseValueTheProviderRejects(bytes)
            try checkSession(reading: nil)
        }
        let attributes = try attributesMarkingValue(at: path, setting: attributes, secret: secret?.0)
        if label == nil, attributes == nil, let (bytes, contentType) = secret {
            return try setSecret(at: path, bytes, contentType: contentType)
        }
        let item = try throwingGError {
            secret_item_new_for_dbus_path_sync(service, path, SECRET_ITEM_NONE, cancellable, $0)
        }
        guard let item else { throw .serviceFailure(domain: "libsecret", code: -1, message: "the item disappeared") }
        defer { g_object_unref(item) }
        if secret_item_get_locked(item) != 0 { throw lockedError(at: [path]) }
        if let attributes {
            let table = makeTable(attributes)
            defer { g_hash_table_unref(table) }
            _ = try throwingGError { secret_item_set_attributes_sync(item, nil, table, cancellable, $0) }
        }
        if let (bytes, contentType) = secret {
            let value = makeValue(bytes, contentType: contentType)
            defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
            _ = try throwingGError { secret_item_set_secret_sync(item, value, cancellable, $0) }
        }
        // After the secret: the label's ItemChanged then tells watchers of a secret already
        // changed (gnome-keyring and KWallet send nothing for the secret itself).
        if let label {
            _ = try throwingGError { secret_item_set_label_sync(item, label, cancellable, $0) }
        }
        // KWallet ignores writes to a locked wallet without an error: a lock that came after the
        // check above may have dropped them.
        if try properties(at: path, isLocked: false)?.isLocked == true { throw lockedError(at: [path]) }
        flushAfterWrite()
    }

    /// The attributes an update sends so that, where the provider saves values late, the item's
    /// non-empty marker follows its value (set before the value: the marker with an empty value
    /// reads as lost, never the reverse); nil when nothing needs sending. Elsewhere, `attributes`.
    private func attributesMarkingValue(
        at path: String, setting attributes: [String: String]?, secret: Data?
    ) throws(KeyringError) -> [String: String]? {
        guard provider().quirks.savesValuesLate, let current = try properties(at: path, isLocked: false) else { return attributes }
        let marked = ProviderAttributes.marksNonEmpty(current.attributes)
        let nonEmpty = secret.map { !$0.isEmpty } ?? marked
        if attributes == nil && nonEmpty == marked { return nil }
        return ProviderAttributes.marked(attributes ?? current.attributes, nonEmpty: nonEmpty)
    }

    /// Sets the item's label to `label`, the one it has, after a secret-only update: gnome-keyring
    /// and KWallet emit no signal for `Item.SetSecret`, but `ItemChanged` for a label set, so
    /// other processes watching the item (`SecretStore.changes()`) learn of the new secret.
    /// Skipped where the provider signals SetSecret itself (KeePassXC).
    func announceSecretChange(at path: String, label: String) throws(KeyringError) {
        if provider().quirks.signalsSetSecret { return }
        let done: ()? = try callService(
            path, interface: "org.freedesktop.DBus.Properties", method: "Set",
            kr_variant_set_string_tuple("org.freedesktop.Secret.Item", "Label", label), reply: "()"
        ) { _ in () }
        if done == nil { throw .serviceFailure(domain: "libsecret", code: -1, message: "the item disappeared") }
    }

    /// A secret-only update: one SetSecret call with the value encoded for this session, where a
    /// SecretItem proxy would cost three more round trips. A locked item fails the call, except
    /// where the provider drops the write silently (KWallet): there the item's state is read back.
    private func setSecret(at path: String, _ bytes: Data, contentType: String) throws(KeyringError) {
        try requireCurrentSession()
        let value = makeValue(bytes, contentType: contentType)
        defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
        guard let encoded = secret_service_encode_dbus_secret(service, value) else {
            throw .serviceFailure(domain: "libsecret", code: -1, message: "the value could not be encoded for the session")
        }
        do throws(KeyringError) {
            let done: ()? = try callService(
                path, interface: "org.freedesktop.Secret.Item", method: "SetSecret", kr_variant_tuple_of(encoded), reply: "()"
            ) { _ in () }
            if done == nil { throw .serviceFailure(domain: "libsecret", code: -1, message: "the item disappeared") }
        } catch .locked {
            throw lockedError(at: [path])
        }
        if provider().quirks.dropsWritesWhileLocked, try properties(at: path, isLocked: false)?.isLocked == true {
            throw lockedError(at: [path])
        }
        flushAfterWrite()
    }

    /// Deletes the item at `path`, unless it reports Locked: KWallet "deletes" an item of a
    /// locked wallet by hiding it until the wallet opens again, and answers success.
    func deleteItem(at path: String) throws(KeyringError) {
        if try properties(at: path, isLocked: false)?.isLocked == true { throw lockedError(at: [path]) }
        _ = try throwingGError {
            secret_service_delete_item_dbus_path_sync(service, path, cancellable, $0)
        }
        flushAfterWrite()
    }

    private func makeTable(_ attributes: [String: String]) -> OpaquePointer {
        let table = kr_string_table_new()!
        for (name, value) in attributes { kr_string_table_insert(table, name, value) }
        return table
    }

    private func makeValue(_ bytes: Data, contentType: String) -> OpaquePointer {
        // secret_value_new copies into libsecret's non-pageable memory and wipes it on release.
        bytes.withUnsafeBytes { raw in
            guard let base = raw.baseAddress, raw.count > 0 else { return secret_value_new("", 0, contentType) }
            return secret_value_new(base.assumingMemoryBound(to: CChar.self), raw.count, contentType)
        }
    }
}
