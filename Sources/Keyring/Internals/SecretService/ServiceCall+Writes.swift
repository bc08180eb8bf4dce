internal import CLibSecret
internal import KeyringShim

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Every write: Collection.CreateItem, Item.SetSecret, the item's Label and Attributes
/// properties, Item.Delete. Each public write runs the provider's hooks once (`writing`).
extension ServiceCall {
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
        // Every caller searched first and found nothing: where a locked collection may hide the
        // item (KeePassXC), a new one would become a twin that loses to it after the unlock.
        var hidden = notes.searchedWhileHidden
        if !hidden { hidden = try missCouldBeHidden() }
        if hidden { throw lockedError(at: [], itemExists: false) }
        try Provider.beforeWriting(secret, attributes: attributes, in: self)
        let sent = provider().quirks.savesValuesLate ? ProviderAttributes.marked(attributes, nonEmpty: !secret.isEmpty) : attributes
        let path = try insertItem(attributes: sent, label: label, secret: secret, contentType: contentType)
        Provider.afterWriting(in: self)
        let now = Date()
        ServiceSignals.noteCreated(
            KeyringItem(objectPath: path, attributes: attributes, label: label, isLocked: false, created: now, modified: now))
        return path
    }

    /// Collection.CreateItem in the default collection: `createItem` without the provider's hooks,
    /// for the session check's own item.
    func insertItem(attributes: [String: String], label: String, secret: Data, contentType: String) throws(KeyringError) -> String {
        // Without a default collection libsecret would ask the service to create one, which prompts.
        guard let collectionPath = try defaultCollectionPath() else { throw .noDefaultCollection }
        guard let locked = try collectionLocked(at: collectionPath) else { throw Self.vanished("Properties.Get(Locked)") }
        if locked { throw lockedError(at: [collectionPath], itemExists: false) }
        guard
            let created = try sendCreateItem(
                in: collectionPath, attributes: attributes, label: label, secret: secret, contentType: contentType, replacing: false)
        else { throw Self.vanished("CreateItem") }
        return created
    }

    /// Collection.CreateItem in the collection at `collectionPath`, running the prompt the service
    /// may ask for within this call's deadline; nil when the collection is gone. With `replacing`,
    /// the service's replace flag: only where it removes items of exactly these attributes.
    private func sendCreateItem(
        in collectionPath: String, attributes: [String: String], label: String, secret: Data, contentType: String,
        replacing: Bool
    ) throws(KeyringError) -> String? {
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
                kr_create_item_tuple(label, table, encoded, replacing ? 1 : 0), reply: "(oo)",
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
        else { return nil }
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
        return created
    }

    /// The default collection ReadAlias named was gone by `method`: a failure, not "no default
    /// collection", which would let a caller keep a new value elsewhere as if the keyring had none.
    private static func vanished(_ method: String) -> KeyringError {
        .serviceFailure(domain: "KeyringIdentity", code: -1, message: "the default collection vanished between ReadAlias and \(method)")
    }

    /// Updates the item whose attributes are exactly `attributes`; false when there is none.
    /// Searched again when another client's update replaced the item meanwhile.
    func updateExactly(
        _ attributes: [String: String], secret: Data, contentType: String, label: String
    ) throws(KeyringError) -> Bool {
        var attempts = 0
        while true {
            do throws(KeyringError) {
                return try updateExactlyOnce(attributes, secret: secret, contentType: contentType, label: label)
            } catch let error where error == Self.replacedMeanwhile && attempts < Self.replaceAttempts {
                attempts += 1
            }
        }
    }

    /// Where updates replace items (`Quirks.keepsItemChanges` false), another client's update of the
    /// same item gives it a new path between this update's search and its write; the update then
    /// searches again, and the last writer wins, as with `SetSecret` elsewhere.
    static let replacedMeanwhile = KeyringError.serviceFailure(
        domain: "KeyringIdentity", code: -1, message: "another client replaced the item while this update was being made")
    /// How often an update searches again after `replacedMeanwhile` (each try within the call's deadline).
    static let replaceAttempts = 8

    private func updateExactlyOnce(
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
        try updateItem(at: item.objectPath, secret: (secret, contentType), label: label, describedBy: attributes)
        return true
    }

    /// Changes the parts of an existing item that are given; the others stay as they are: the
    /// secret alone with Item.SetSecret, else through libsecret's item (Properties.Set of
    /// Attributes, Item.SetSecret, Properties.Set of Label, in that order).
    /// - Parameter describedBy: attributes the caller knows the item by, for the provider's refusals
    ///   when `attributes` are not being set.
    func updateItem(
        at path: String, secret: (Data, contentType: String)? = nil, label: String? = nil, attributes: [String: String]? = nil,
        describedBy known: [String: String]? = nil
    ) throws(KeyringError) {
        if let (bytes, _) = secret { try Provider.beforeWriting(bytes, attributes: attributes ?? known, in: self) }
        if !provider().quirks.keepsItemChanges {
            try replaceItem(at: path, secret: secret, label: label, attributes: attributes)
            return Provider.afterWriting(in: self)
        }
        let attributes = try attributesMarkingValue(at: path, setting: attributes, secret: secret?.0)
        if label == nil, attributes == nil, let (bytes, contentType) = secret {
            try setSecret(at: path, bytes, contentType: contentType)
            return Provider.afterWriting(in: self)
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
        Provider.afterWriting(in: self)
    }

    /// An update where the provider keeps an item's changes in memory only (`Quirks.keepsItemChanges`,
    /// oo7-daemon): one replacing CreateItem in the item's collection, which the provider saves
    /// before it answers, with the parts not given as the item has them. Its replace removes only
    /// items of exactly the attributes sent, so an unchanged item is sent with every attribute the
    /// provider shows (its own `xdg:content-type` too); new attributes leave the old item, which is
    /// then deleted. The first such update adds `ProviderAttributes.firstCreated`, so that the item
    /// keeps its place in `ItemOrder`. The new item's value is read back: a replace the provider
    /// did not make throws.
    /// - Throws: `replacedMeanwhile` when another client's update replaced the item first.
    private func replaceItem(
        at path: String, secret: (Data, contentType: String)?, label: String?, attributes: [String: String]?
    ) throws(KeyringError) {
        guard let current = try properties(at: path, isLocked: false) else { throw Self.replacedMeanwhile }
        if current.isLocked { throw lockedError(at: [path]) }
        let value: (bytes: Data, contentType: String)
        if let secret {
            value = secret
        } else if let stored = try self.secret(at: path) {
            value = stored
        } else {
            throw Self.replacedMeanwhile
        }
        let collectionPath = Self.collectionPath(of: path)
        try BusCall.requireObjectPath(collectionPath, naming: "the item's collection")
        var sent = attributes ?? current.attributes
        // The replace makes the item the newest: it keeps the order of its first creation.
        let first = ProviderAttributes.firstCreated
        if sent[first] == nil, let stamp = current.attributes[first] ?? current.created.map(ItemOrder.stamp) { sent[first] = stamp }
        guard
            let created = try sendCreateItem(
                in: collectionPath, attributes: sent, label: label ?? current.label, secret: value.bytes,
                contentType: value.contentType, replacing: true)
        else { throw .serviceFailure(domain: "libsecret", code: -1, message: "the item's collection disappeared") }
        var kept = created
        // Still there: its replace matched nothing (the attributes changed), so it is deleted. When
        // the new attributes only add to the old, that delete takes the new item too, and saves it again.
        if created != path, try properties(at: path, isLocked: false) != nil {
            kept = try deleteItem(at: path)[created] ?? created
        }
        // Gone is a later writer's replace (the last writer wins); another value at the new path is not.
        if let stored = try self.secret(at: kept), stored.bytes != value.bytes {
            throw .serviceFailure(
                domain: "KeyringIdentity", code: -1, message: "the provider answered a replacing CreateItem but does not hold the new value"
            )
        }
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
        // A replacing update (`keepsItemChanges` false) was signalled as a deletion and a creation.
        if provider().quirks.signalsSetSecret || !provider().quirks.keepsItemChanges { return }
        let done: ()? = try callService(
            path, interface: "org.freedesktop.DBus.Properties", method: "Set",
            kr_variant_set_string_tuple("org.freedesktop.Secret.Item", "Label", label), reply: "()"
        ) { _ in () }
        if done == nil { throw .serviceFailure(domain: "libsecret", code: -1, message: "the item disappeared") }
    }

    /// A secret-only update: one Item.SetSecret call with the value encoded for this session, where a
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
    }

    /// Item.Delete on the item at `path`, unless it reports Locked: KWallet "deletes" an item of a
    /// locked wallet by hiding it until the wallet opens again, and answers success.
    /// - Parameter batch: the items this call deletes next: a delete that takes them along leaves them.
    /// - Returns: the new path of each item the delete took along and saved again, by its old path.
    /// - Throws: `saveAgainFailed` when an item the delete took along could not be saved again
    ///   (the others were): the item at `path` is deleted then.
    @discardableResult
    func deleteItem(at path: String, batch: Set<String> = []) throws(KeyringError) -> [String: String] {
        let item = try properties(at: path, isLocked: false)
        if item?.isLocked == true { throw lockedError(at: [path]) }
        var takenAlong: [TakenItem] = []
        if let item, provider().quirks.deletesAttributeSupersets {
            takenAlong = try itemsDeleted(along: item).filter { !batch.contains($0.item.objectPath) }
        }
        _ = try throwingGError {
            secret_service_delete_item_dbus_path_sync(service, path, cancellable, $0)
        }
        let moved = try saveAgain(takenAlong)
        Provider.afterWriting(in: self)
        return moved
    }

    /// Deletes `items`; where a delete takes others along (`Quirks.deletesAttributeSupersets`),
    /// those of `items` are not saved again only to be deleted next.
    func deleteItems(_ items: [KeyringItem]) throws(KeyringError) {
        var remaining = Set(items.map(\.objectPath))
        for item in items {
            remaining.remove(item.objectPath)
            try deleteItem(at: item.objectPath, batch: remaining)
        }
    }

    /// An item a delete took from the provider's file, and its value, read before the delete.
    private typealias TakenItem = (item: KeyringItem, value: (bytes: Data, contentType: String))

    /// What a delete of `item` also removes from the provider's file: the other items of its
    /// collection whose attributes include its own (its twins too), with their values.
    private func itemsDeleted(along item: KeyringItem) throws(KeyringError) -> [TakenItem] {
        let collection = Self.collectionPath(of: item.objectPath)
        var taken: [TakenItem] = []
        let others = try search(item.attributes).filter {
            $0.objectPath != item.objectPath && Self.collectionPath(of: $0.objectPath) == collection
        }
        for other in others {
            if other.isLocked { throw lockedError(at: [other.objectPath]) }
            // Gone meanwhile: nothing to keep.
            if let value = try secret(at: other.objectPath) { taken.append((other, value)) }
        }
        return taken
    }

    /// Saves the items a delete took from the provider's file again, as they were: CreateItem with
    /// each one's exact attributes. The first of each set of attributes replaces the copies still
    /// on the bus (its replace removes every item of exactly those); its twins are made beside it.
    /// Every item is tried, whatever failed before it.
    private func saveAgain(_ taken: [TakenItem]) throws(KeyringError) -> [String: String] {
        var moved: [String: String] = [:]
        var replaced: Set<[String: String]> = []
        var failures: [KeyringError] = []
        for other in taken {
            do throws(KeyringError) {
                guard
                    let path = try sendCreateItem(
                        in: Self.collectionPath(of: other.item.objectPath), attributes: other.item.attributes, label: other.item.label,
                        secret: other.value.bytes, contentType: other.value.contentType,
                        replacing: replaced.insert(other.item.attributes).inserted)
                else { throw .serviceFailure(domain: "libsecret", code: -1, message: "the item's collection disappeared") }
                moved[other.item.objectPath] = path
            } catch {
                failures.append(error)
            }
        }
        guard let first = failures.first else { return moved }
        throw .serviceFailure(
            domain: "KeyringIdentity", code: Self.saveAgainFailedCode,
            message: "the provider's delete also removed \(taken.count) other item(s) from its file, and \(failures.count) "
                + "could not be saved again (\(first)); they are lost when it restarts")
    }

    /// The code of `saveAgain`'s failure, apart from ServiceFailure's own codes: callers that take
    /// a failed delete of a vanished item for success must not take this one so.
    private static let saveAgainFailedCode: Int32 = -12

    /// True for `saveAgain`'s failure: the delete was made, and another item was lost with it.
    static func isSaveAgainFailure(_ error: KeyringError) -> Bool {
        if case .serviceFailure("KeyringIdentity", saveAgainFailedCode, _) = error { true } else { false }
    }

    /// The collection an item path lies in: the path up to its last slash.
    static func collectionPath(of itemPath: String) -> String {
        String(itemPath[..<(itemPath.lastIndex(of: "/") ?? itemPath.endIndex)])
    }

    private func makeTable(_ attributes: [String: String]) -> OpaquePointer {
        let table = kr_string_table_new()
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
