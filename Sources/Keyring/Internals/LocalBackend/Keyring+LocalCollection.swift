#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `Keyring`'s operations on a local collection (`LocalKeyring`: libsecret's file backend, or
/// KeyringTesting's in-memory keyring), with the Secret Service path's guarantees: one item per
/// exact attribute set, byte-exact secrets, typed errors, and a locked collection never read as empty.
extension Keyring {
    /// True when this keyring's operations go to a local collection: the file backend, or a test's
    /// in-memory keyring.
    var usesLocalCollection: Bool { localKeyring != nil }

    private var local: any LocalKeyring { localKeyring ?? FileLocalKeyring() }

    func localSearch(_ attributes: [String: String]) throws(KeyringError) -> [KeyringItem] {
        try local.search(attributes, timeout: timeout)
    }

    func localList(_ attributes: [String: String]) throws(KeyringError) -> [KeyringItem] {
        try local.list(attributes, timeout: timeout, unlock: unlock)
    }

    func localSearchProvingMiss(_ attributes: [String: String], keeping keep: (KeyringItem) -> Bool) throws(KeyringError) -> [KeyringItem] {
        try local.searchProvingMiss(attributes, keeping: keep, timeout: timeout)
    }

    func localReadAll(_ attributes: [String: String]) throws(KeyringError) -> [(item: KeyringItem, secret: Data)] {
        try local.readAll(attributes, timeout: timeout, unlock: unlock)
    }

    func localStore(_ secret: Data, attributes: [String: String], label: String, contentType: String = "text/plain") throws(KeyringError) {
        try local.store(secret, attributes: attributes, label: label, contentType: contentType, timeout: timeout, unlock: unlock)
    }

    func localInsertIfAbsent(
        _ secret: Data, attributes: () -> [String: String], matching: [String: String], label: String, order: ItemOrder,
        contentType: String = "text/plain"
    ) throws(KeyringError) -> InsertOutcome {
        try local.insertIfAbsent(
            secret, attributes: attributes, matching: matching, label: label, contentType: contentType, order: order,
            timeout: timeout, unlock: unlock)
    }

    func localWithCreationLock<T>(_ body: () throws(KeyringError) -> T) throws(KeyringError) -> T {
        try local.withCreationLock(timeout: timeout, body)
    }

    func localDelete(_ attributes: [String: String]) throws(KeyringError) -> Int {
        try local.delete(attributes, timeout: timeout, unlock: unlock)
    }

    func localSecret(of item: KeyringItem) throws(KeyringError) -> Data? {
        try local.secret(of: item, timeout: timeout, unlock: unlock)
    }

    func localDelete(item: KeyringItem) throws(KeyringError) {
        try local.delete(item: item, timeout: timeout, unlock: unlock)
    }

    func localStatus() -> ServiceStatus { local.status(timeout: timeout) }
}

extension LocalKeyring {
    /// Every match, locked ones too (marked so); never prompts.
    func search(_ attributes: [String: String], timeout: Duration) throws(KeyringError) -> [KeyringItem] {
        try run(timeout: timeout, exclusive: false, prompt: nil) { items throws(KeyringError) in
            let found = try items.listed(matching: attributes).map(\.item)
            // As `Keyring.search` on the Secret Service: nothing found where locked items hide is not "no items".
            if found.isEmpty && items.missCouldBeHidden { throw .locked(itemExists: false) }
            return found
        }
    }

    /// `SecretStore.items`: every match, locked ones marked so, as gnome-keyring lists them. A miss
    /// that a locked collection may hide (a keyring that hides locked items) asks to unlock, as
    /// `policy` allows, and lists again: never "no items" for a locked keyring.
    func list(_ attributes: [String: String], timeout: Duration, unlock policy: UnlockPolicy) throws(KeyringError) -> [KeyringItem] {
        let (found, locked) = try run(timeout: timeout, exclusive: false, prompt: nil) { items throws(KeyringError) in
            (try items.listed(matching: attributes).map(\.item), items.missCouldBeHidden)
        }
        if !found.isEmpty || !locked { return found }
        return try run(timeout: timeout, exclusive: false, prompt: policy) { items throws(KeyringError) in
            if items.isLocked { throw .locked(itemExists: false, unlock: items.unlockOutcome) }
            return try items.listed(matching: attributes).map(\.item)
        }
    }

    /// The kept matches; a locked one, or none kept while a locked collection may hide them, is `.locked`. Never prompts.
    func searchProvingMiss(
        _ attributes: [String: String], keeping keep: (KeyringItem) -> Bool, timeout: Duration
    ) throws(KeyringError) -> [KeyringItem] {
        try run(timeout: timeout, exclusive: false, prompt: nil) { items throws(KeyringError) in
            let kept = try items.listed(matching: attributes).map(\.item).filter(keep)
            if kept.contains(where: \.isLocked) || (kept.isEmpty && items.missCouldBeHidden) { throw .locked(itemExists: !kept.isEmpty) }
            return kept
        }
    }

    func readAll(_ attributes: [String: String], timeout: Duration, unlock: UnlockPolicy) throws(KeyringError) -> [(
        item: KeyringItem, secret: Data
    )] {
        try run(timeout: timeout, exclusive: false, prompt: unlock) { items throws(KeyringError) in
            try items.readable(attributes).sorted { ItemOrder.standard.precedes($0.item, $1.item) }.map { ($0.item, $0.secret) }
        }
    }

    func store(
        _ secret: Data, attributes: [String: String], label: String, contentType: String, timeout: Duration, unlock: UnlockPolicy
    ) throws(KeyringError) {
        try run(timeout: timeout, exclusive: true, prompt: unlock) { items throws(KeyringError) in
            try items.store(attributes, label: label, secret: secret, contentType: contentType)
        }
    }

    func insertIfAbsent(
        _ secret: Data, attributes: () -> [String: String], matching: [String: String], label: String, contentType: String,
        order: ItemOrder, timeout: Duration, unlock: UnlockPolicy
    ) throws(KeyringError) -> InsertOutcome {
        try run(timeout: timeout, exclusive: true, prompt: unlock) { items throws(KeyringError) -> InsertOutcome in
            if let found = try items.readable(matching).min(by: { order.precedes($0.item, $1.item) }) {
                return .existing(item: found.item, secret: found.secret)
            }
            // Built under the collection's lock, so a "first made" stamp is never older than the check.
            try items.store(attributes(), label: label, secret: secret, contentType: contentType)
            return .inserted
        }
    }

    func delete(_ attributes: [String: String], timeout: Duration, unlock: UnlockPolicy) throws(KeyringError) -> Int {
        try run(timeout: timeout, exclusive: true, prompt: unlock) { items throws(KeyringError) in
            try items.readable(attributes).isEmpty ? 0 : try items.removeAll(attributes)
        }
    }

    func secret(of item: KeyringItem, timeout: Duration, unlock: UnlockPolicy) throws(KeyringError) -> Data? {
        try run(timeout: timeout, exclusive: false, prompt: unlock) { items throws(KeyringError) in
            try items.listed().first { $0.item.objectPath == item.objectPath }?.secret
        }
    }

    func delete(item: KeyringItem, timeout: Duration, unlock: UnlockPolicy) throws(KeyringError) {
        try run(timeout: timeout, exclusive: true, prompt: unlock) { items throws(KeyringError) in
            try items.remove(objectPath: item.objectPath)
        }
    }
}
