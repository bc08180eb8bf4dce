/// What a watch saw of its scope at one look: each matching item by object path, with a digest of
/// its secret where it could be read (never the secret itself), and each watched collection's lock
/// state by path.
struct ChangeSnapshot: Sendable, Equatable {
    /// One item as a look saw it.
    struct Entry: Sendable, Equatable {
        var item: KeyringItem
        /// SHA-256 of the secret; nil where it could not be read (locked, or gone meanwhile).
        var secretDigest: String?
    }

    var items: [String: Entry] = [:]
    var collections: [String: Bool] = [:]
}

/// The one rule every watch uses to turn two looks into changes, whatever the store.
enum ChangeRule {
    /// The changes that turn `old` into `new`, in this order: each collection seen in both whose
    /// lock state differs (locked or unlocked), then each item gone (deleted), then each item new
    /// (created) or changed (`isChanged`); each group by path.
    static func changes(from old: ChangeSnapshot, to new: ChangeSnapshot) -> [KeyringChange] {
        var changes: [KeyringChange] = []
        for (collection, locked) in new.collections.sorted(by: { $0.key < $1.key })
        where old.collections[collection].map({ $0 != locked }) ?? false {
            changes.append(KeyringChange(locked ? .locked : .unlocked, collection: collection))
        }
        for (path, entry) in old.items.sorted(by: { $0.key < $1.key }) where new.items[path] == nil {
            changes.append(KeyringChange(.deleted, item: entry.item))
        }
        for (path, entry) in new.items.sorted(by: { $0.key < $1.key }) {
            guard let before = old.items[path] else {
                changes.append(KeyringChange(.created, item: entry.item))
                continue
            }
            if isChanged(before, entry) { changes.append(KeyringChange(.changed, item: entry.item)) }
        }
        return changes
    }

    /// Whether an item seen in both looks changed: what a client sees of it (`differ`), or its
    /// secret, when both looks read it. An unreadable secret is no change.
    static func isChanged(_ before: ChangeSnapshot.Entry, _ after: ChangeSnapshot.Entry) -> Bool {
        if differ(before.item, after.item) { return true }
        guard let old = before.secretDigest, let new = after.secretDigest else { return false }
        return old != new
    }

    /// Whether what a client sees of an item changed: attributes (but the schema stamp, which
    /// gnome-keyring rewrites on a restart, and those a provider adds), label, modification time.
    static func differ(_ before: KeyringItem, _ after: KeyringItem) -> Bool {
        SecretStore.comparable(before.attributes) != SecretStore.comparable(after.attributes) || before.label != after.label
            || before.modified != after.modified
    }
}
