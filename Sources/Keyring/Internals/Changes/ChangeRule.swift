/// What a watch saw of its scope at one look: each matching item by object path (by name on the
/// file backend), with a digest of its secret where it could be read (never the secret itself),
/// each watched collection's lock state, and whether the store's daemon was running.
struct ChangeSnapshot: Sendable, Equatable {
    /// One item as a look saw it.
    struct Entry: Sendable, Equatable {
        var item: KeyringItem
        /// SHA-256 of the secret; nil where it could not be read (locked, or gone meanwhile).
        var secretDigest: String?
        /// The collection whose lock can hide the item; nil where nothing hides items (the file
        /// backend, a memory keyring that lists locked items) or the item is known gone.
        var collection: String? = nil
        /// Missing from a locked or vanished collection: kept as last seen, marked locked.
        var isHidden = false
    }

    /// A watched collection's state.
    enum CollectionState: Sendable, Equatable {
        case unlocked, locked
        /// Gone from the bus (a database closed, a daemon still loading): its items may be hidden.
        case gone
    }

    var items: [String: Entry] = [:]
    var collections: [String: CollectionState] = [:]
    /// Whether the store's daemon owned its name (the Secret Service's; other stores always run).
    var isRunning = true
    /// Whether item paths may have been numbered anew since the last look: a full look, which may
    /// follow a restart (KWallet numbers its paths anew at each start).
    var mayRenumber = false

    /// The collection state for a lock state read from the store (nil: gone).
    static func state(locked: Bool?) -> CollectionState {
        locked.map { $0 ? .locked : .unlocked } ?? .gone
    }
}

/// The one rule every watch uses to turn two looks into changes, whatever the store.
enum ChangeRule {
    /// The changes that turn `old` into `new`.
    static func changes(from old: ChangeSnapshot, to new: ChangeSnapshot) -> [KeyringChange] {
        apply(from: old, to: new).changes
    }

    /// The changes that turn `old` into `seen`, and the snapshot to compare the next look with.
    ///
    /// Before comparing, `seen` is read as what it stands for:
    /// - with `mayRenumber`, an item the same (`sameItem`) as one seen at another path is that item, moved (`moves`);
    /// - an item that hides its attributes (locked, on gnome-keyring) is what was seen before, locked;
    /// - an item missing while its collection is locked, gone or absent is hidden, not deleted
    ///   (KeePassXC and oo7-daemon take a locked collection's items off the bus);
    /// - a secret not read now keeps the digest read before, so an unlock compares with it.
    ///
    /// The changes, in this order: the daemon stopped or started; each collection whose lock state
    /// differs (locked or unlocked); each item gone (deleted); each item new (created) or changed
    /// (`isChanged`, but an item that became locked, whose collection's lock is the change: it is
    /// kept as it was, so the change shows at the unlock). Each group by path.
    static func apply(from old: ChangeSnapshot, to seen: ChangeSnapshot) -> (changes: [KeyringChange], next: ChangeSnapshot) {
        var new = seen
        var before = old.items
        var displaced: [ChangeSnapshot.Entry] = []
        if new.mayRenumber { (before, displaced) = moves(from: old.items, to: new.items) }
        for (path, entry) in new.items where entry.item.hidesAttributes {
            if let was = before[path] { new.items[path]?.item = was.item.with(locked: true) }
        }
        for (path, was) in before where new.items[path] == nil {
            guard let collection = was.collection, new.collections[collection] != .unlocked else { continue }
            new.items[path] = ChangeSnapshot.Entry(
                item: was.item.with(locked: true), secretDigest: was.secretDigest, collection: collection, isHidden: true)
        }

        var changes: [KeyringChange] = []
        if old.isRunning != new.isRunning { changes.append(KeyringChange(new.isRunning ? .serviceStarted : .serviceStopped)) }
        for (collection, state) in new.collections.sorted(by: { $0.key < $1.key }) {
            switch (old.collections[collection], state) {
            case (.unlocked, .locked): changes.append(KeyringChange(.locked, collection: collection))
            case (.locked, .unlocked): changes.append(KeyringChange(.unlocked, collection: collection))
            default: break
            }
        }
        let gone = before.filter { new.items[$0.key] == nil }.map(\.value) + displaced
        for was in gone.sorted(by: { $0.item.objectPath < $1.item.objectPath }) {
            changes.append(KeyringChange(.deleted, item: was.item))
        }
        for (path, entry) in new.items.sorted(by: { $0.key < $1.key }) {
            guard let was = before[path] else {
                changes.append(KeyringChange(.created, item: entry.item))
                continue
            }
            if entry.secretDigest == nil { new.items[path]?.secretDigest = was.secretDigest }
            guard isChanged(was, entry) else { continue }
            if entry.item.isLocked && !was.item.isLocked {
                // Kept as it was, locked: a change made with the lock shows at the unlock.
                new.items[path]?.item = was.item.with(locked: true)
            } else {
                changes.append(KeyringChange(.changed, item: entry.item))
            }
        }
        new.mayRenumber = false
        return (changes, new)
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

    /// The last look's items as the new paths hold them, after a renumbering: each item the same
    /// (`sameItem`) as the one now at its path stays; each other one that is the same as an item
    /// at another path, not held so, moved there; the rest stay at their paths (changed there,
    /// hidden or deleted), unless a moved item took that path: those are `displaced`, found nowhere.
    static func moves(
        from before: [String: ChangeSnapshot.Entry], to now: [String: ChangeSnapshot.Entry]
    ) -> (before: [String: ChangeSnapshot.Entry], displaced: [ChangeSnapshot.Entry]) {
        var placed = before.filter { path, was in now[path].map { sameItem(was.item, $0.item) } ?? false }
        var unplaced = before.filter { placed[$0.key] == nil }
        for (path, entry) in now.sorted(by: { $0.key < $1.key }) where placed[path] == nil {
            guard let match = unplaced.sorted(by: { $0.key < $1.key }).first(where: { sameItem($0.value.item, entry.item) }) else {
                continue
            }
            unplaced[match.key] = nil
            var was = match.value
            was.item = was.item.with(path: path)
            placed[path] = was
        }
        var displaced: [ChangeSnapshot.Entry] = []
        for (path, was) in unplaced.sorted(by: { $0.key < $1.key }) {
            if placed[path] == nil { placed[path] = was } else { displaced.append(was) }
        }
        return (placed, displaced)
    }

    /// Whether two items at different paths are one item: the same attributes (as compared for a
    /// change) and label, with attributes to compare (a locked item may show none).
    static func sameItem(_ before: KeyringItem, _ after: KeyringItem) -> Bool {
        let attributes = SecretStore.comparable(before.attributes)
        return !attributes.isEmpty && attributes == SecretStore.comparable(after.attributes) && before.label == after.label
    }
}

extension KeyringItem {
    /// This item at another path (moved) or with another lock state.
    func with(path: String? = nil, locked: Bool? = nil) -> KeyringItem {
        KeyringItem(
            objectPath: path ?? objectPath, attributes: attributes, label: label, isLocked: locked ?? isLocked, created: created,
            modified: modified)
    }
}
