#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `KeyringStore` on a local collection (`LocalKeyring`: libsecret's file backend, or
/// KeyringTesting's in-memory keyring), with the Secret Service store's guarantees: one item per
/// exact attribute set, byte-exact secrets, typed errors, and a locked collection never read as empty.
extension LocalKeyring {
    /// Every match, locked ones too (marked so); never prompts.
    package func search(_ attributes: [String: String], _ options: CallOptions) throws(KeyringError) -> [KeyringItem] {
        try run(timeout: options.timeout, exclusive: false, prompt: nil) { items throws(KeyringError) in
            let found = try items.listed(matching: attributes).map(\.item)
            // As `Keyring.search` on the Secret Service: nothing found where locked items hide is not "no items".
            if found.isEmpty && items.missCouldBeHidden { throw .locked(itemExists: false) }
            return found
        }
    }

    /// `SecretStore.items`: every match, locked ones marked so, as gnome-keyring lists them. A miss
    /// that a locked collection may hide (a keyring that hides locked items) asks to unlock, as
    /// `policy` allows, and lists again: never "no items" for a locked keyring.
    package func list(_ attributes: [String: String], _ options: CallOptions) throws(KeyringError) -> [KeyringItem] {
        let (found, locked) = try run(timeout: options.timeout, exclusive: false, prompt: nil) { items throws(KeyringError) in
            (try items.listed(matching: attributes).map(\.item), items.missCouldBeHidden)
        }
        if !found.isEmpty || !locked { return found }
        return try run(timeout: options.timeout, exclusive: false, prompt: options.unlock) { items throws(KeyringError) in
            if items.isLocked { throw .locked(itemExists: false, unlock: items.unlockOutcome) }
            return try items.listed(matching: attributes).map(\.item)
        }
    }

    /// The kept matches; a locked one, or none kept while a locked collection may hide them, is `.locked`. Never prompts.
    package func searchProvingMiss(
        _ attributes: [String: String], keeping keep: (KeyringItem) -> Bool, _ options: CallOptions
    ) throws(KeyringError) -> [KeyringItem] {
        try run(timeout: options.timeout, exclusive: false, prompt: nil) { items throws(KeyringError) in
            let kept = try items.listed(matching: attributes).map(\.item).filter(keep)
            if kept.contains(where: \.isLocked) || (kept.isEmpty && items.missCouldBeHidden) { throw .locked(itemExists: !kept.isEmpty) }
            return kept
        }
    }

    /// A local collection loses no value, so `lostAsEmpty` changes nothing.
    package func readAll(
        _ attributes: [String: String], lostAsEmpty: Bool, _ options: CallOptions
    ) throws(KeyringError) -> [(item: KeyringItem, secret: Data)] {
        try run(timeout: options.timeout, exclusive: false, prompt: options.unlock) { items throws(KeyringError) in
            try items.readable(attributes).sorted { ItemOrder.standard.precedes($0.item, $1.item) }.map { ($0.item, $0.secret) }
        }
    }

    package func store(
        _ secret: Data, attributes: [String: String], label: String, contentType: String, _ options: CallOptions
    ) throws(KeyringError) {
        try run(timeout: options.timeout, exclusive: true, prompt: options.unlock) { items throws(KeyringError) in
            try items.store(attributes, label: label, secret: secret, contentType: contentType)
        }
    }

    package func insertIfAbsent(
        _ secret: Data, attributes: () -> [String: String], matching: [String: String], label: String, contentType: String,
        order: ItemOrder, _ options: CallOptions
    ) throws(KeyringError) -> InsertOutcome {
        try run(timeout: options.timeout, exclusive: true, prompt: options.unlock) { items throws(KeyringError) -> InsertOutcome in
            if let found = try items.readable(matching).min(by: { order.precedes($0.item, $1.item) }) {
                return .existing(item: found.item, secret: found.secret)
            }
            // Built under the collection's lock, so a "first made" stamp is never older than the check.
            try items.store(attributes(), label: label, secret: secret, contentType: contentType)
            return .inserted
        }
    }

    package func delete(_ attributes: [String: String], _ options: CallOptions) throws(KeyringError) -> Int {
        try run(timeout: options.timeout, exclusive: true, prompt: options.unlock) { items throws(KeyringError) in
            try items.readable(attributes).isEmpty ? 0 : try items.removeAll(attributes)
        }
    }

    package func secret(of item: KeyringItem, _ options: CallOptions) throws(KeyringError) -> Data? {
        try run(timeout: options.timeout, exclusive: false, prompt: options.unlock) { items throws(KeyringError) in
            let listed = try items.listed()
            guard let path = try Self.currentPath(of: item, in: listed, renumbers: items.renumbersItems) else { return nil }
            return listed.first { $0.item.objectPath == path }?.secret
        }
    }

    package func delete(item: KeyringItem, _ options: CallOptions) throws(KeyringError) {
        try run(timeout: options.timeout, exclusive: true, prompt: options.unlock) { items throws(KeyringError) in
            guard let path = try Self.currentPath(of: item, in: try items.listed(), renumbers: items.renumbersItems) else { return }
            try items.remove(objectPath: path)
        }
    }

    /// Where `item` is among `listed` now (`ItemHandle`).
    private static func currentPath(of item: KeyringItem, in listed: [LocalItem], renumbers: Bool) throws(KeyringError) -> String? {
        try ItemHandle.currentPath(
            of: item, renumbers: renumbers, atPath: { listed.first { $0.item.objectPath == item.objectPath }?.item },
            search: { listed.map(\.item) })
    }

    package func lookup(_ attributes: [String: String], _ options: CallOptions) throws(KeyringError) -> Data? {
        try readAll(attributes, lostAsEmpty: false, options).first?.secret
    }

    package func firstItem(_ attributes: [String: String], _ options: CallOptions) throws(KeyringError) -> (
        item: KeyringItem, secret: Data
    )? {
        try readAll(attributes, lostAsEmpty: false, options).first
    }

    /// Nothing local travels unencrypted: as `readAll`.
    package func readAllNonSecret(
        _ attributes: [String: String], _ options: CallOptions
    ) throws(KeyringError) -> [(item: KeyringItem, secret: Data)] {
        try readAll(attributes, lostAsEmpty: false, options)
    }

    package func soleSecret(_ attributes: [String: String], _ options: CallOptions) throws(KeyringError) -> Data? {
        let all = try readAll(attributes, lostAsEmpty: false, options)
        return all.count == 1 ? all[0].secret : nil
    }

    /// The collection's own creation lock, whatever the attributes.
    package func withCreationLock<T>(
        for attributes: [String: String], _ options: CallOptions, _ body: () throws(KeyringError) -> T
    ) throws(KeyringError) -> T {
        try withCreationLock(timeout: options.timeout, body)
    }

    package func status(_ options: CallOptions) -> ServiceStatus { status(timeout: options.timeout) }

    package func isLocked(_ options: CallOptions) throws(KeyringError) -> Bool {
        try run(timeout: options.timeout, exclusive: false, prompt: nil) { items throws(KeyringError) in items.isLocked }
    }

    package func lockCollection(_ options: CallOptions) throws(KeyringError) { try lock(timeout: options.timeout) }

    /// The unlock prompt, as `options.unlock` allows, as every call meets it.
    package func unlockCollection(_ options: CallOptions) throws(KeyringError) {
        try run(timeout: options.timeout, exclusive: false, prompt: options.unlock) { items throws(KeyringError) in
            if items.isLocked { throw .locked(itemExists: false, unlock: items.unlockOutcome) }
        }
    }

    /// A collection that says when it changes (the memory keyring) is watched through that notice.
    package func startWatch(
        _ scope: ChangeScope, _ options: CallOptions, _ continuation: AsyncStream<KeyringChange>.Continuation
    ) throws(KeyringError) -> @Sendable () -> Void {
        try ChangeWatch.start(LocalChangeSource(scope: scope, collection: self, timeout: options.timeout), continuation)
    }
}
