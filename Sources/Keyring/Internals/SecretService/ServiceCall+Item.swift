internal import CLibSecret
internal import KeyringShim

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Reads of items (`org.freedesktop.Secret.Item` and its properties), and the lookups built on
/// them. Each runs inside a `ServiceCall`, so it shares that call's cancellable and deadline.
extension ServiceCall {
    /// All items matching `attributes`, locked ones included, oldest first.
    ///
    /// One SearchItems call, then one Properties.GetAll per match, sent straight on the connection:
    /// libsecret's SecretItem proxies would add a name-owner lookup and activation check per item.
    func search(_ attributes: [String: String]) throws(KeyringError) -> [KeyringItem] {
        let paths = try searchItems(attributes)
        var items: [KeyringItem] = []
        for (list, isLocked) in [(paths.unlocked, false), (paths.locked, true)] {
            for path in list {
                // An item deleted between the search and this call is simply not there any more.
                if let item = try properties(at: path, isLocked: isLocked) { items.append(item) }
            }
        }
        return ItemOrder.standard.sorted(items)
    }

    /// The item's attributes, label and dates, or nil when it no longer exists. A reply that lacks
    /// any of them is a failure: read as an item with no dates, it would count as the oldest.
    func properties(at path: String, isLocked: Bool) throws(KeyringError) -> KeyringItem? {
        do throws(KeyringError) {
            return try callService(
                path, interface: "org.freedesktop.DBus.Properties", method: "GetAll", kr_item_interface_tuple(), reply: "(a{sv})",
                naming: "Properties.GetAll(\(path))"
            ) { reply in Self.item(fromProperties: reply, at: path, isLocked: isLocked) }
        } catch .serviceFailure(let domain, let code, let message) {
            // oo7-daemon refuses every property of an item whose collection is locked. Any failure
            // of that look leaves the first error as it was.
            let collection = Self.collectionPath(of: path)
            if (try? BusCall.requireObjectPath(collection, naming: "")) != nil, (try? collectionLocked(at: collection)) == true {
                throw lockedError(at: [path])
            }
            throw .serviceFailure(domain: domain, code: code, message: message)
        }
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

    /// The path where `item`, from an earlier search, is now; nil when it is gone (`ItemHandle`:
    /// checked where the provider renumbers its items on a start, as KWallet does).
    /// - Throws: `.invalidArgument` for a path that is no D-Bus object path (another backend's
    ///   item); `.serviceFailure` when several items now match it and none is at the old path.
    func currentPath(of item: KeyringItem) throws(KeyringError) -> String? {
        try BusCall.requireObjectPath(item.objectPath, naming: "the item's path")
        return try ItemHandle.currentPath(
            of: item, renumbers: provider().quirks.renumbersItems,
            atPath: { () throws(KeyringError) in try properties(at: item.objectPath, isLocked: false) },
            search: { () throws(KeyringError) in try search(item.attributes) })
    }

    /// The secret bytes of the item at `path`, and their content type; nil when the service
    /// returned none (the item vanished, or is locked: the caller tells which).
    ///
    /// An empty secret is a value only when the item is unlocked: KWallet answers GetSecret on a
    /// locked wallet with success and an empty secret, which then throws `.locked`; and only when
    /// it was written empty: one marked non-empty lost its value (`.valueLost`, ksecretd).
    func secret(at path: String) throws(KeyringError) -> (bytes: Data, contentType: String)? {
        try SessionCheck.run(self, reading: path)
        let value: OpaquePointer?
        do throws(KeyringError) {
            value = try sessionSecret(at: path)
        } catch let error where ServiceFailure(error) == .noSuchItem {
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

    /// The secret at `path`, or nil when it cannot be read for any reason but cancellation, a
    /// timeout, or a session that `run` replaces and retries on (a session key kwalletd does not
    /// share): swallowing that one would leave the bad session in place for the next read.
    func secretIfReadable(at path: String) throws(KeyringError) -> (bytes: Data, contentType: String)? {
        do throws(KeyringError) {
            return try secret(at: path)
        } catch {
            switch error {
            case .cancelled, .timedOut: throw error
            case _ where ServiceFailure.isRetriedOnNewSession(error): throw error
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

    /// The secret of the oldest match. A single unlocked match (the usual case) is read with
    /// SearchItems + GetSecrets, as libsecret's own lookup does; only several matches need each
    /// item's properties to choose.
    func lookup(_ attributes: [String: String]) throws(KeyringError) -> Data? {
        let paths = try searchItems(attributes)
        if paths.unlocked.count == 1, paths.locked.isEmpty,
            let (bytes, _) = try secret(at: paths.unlocked[0])
        {
            return bytes
        }
        return try readFirst(try search(attributes))?.bytes
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
}
