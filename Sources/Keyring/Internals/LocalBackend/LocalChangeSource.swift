/// A collection that says when it changed (KeyringTesting's memory keyring) as a change source:
/// its notice (`LocalKeyring.observeChanges`) is the trigger, and a look reads the matching items
/// straight from it (`LocalKeyring.watchLook`: no prompt, no injected fault met). Nothing here
/// reads a file or the bus, and stopping never waits.
final class LocalChangeSource<Collection: LocalKeyring>: ChangeSource, @unchecked Sendable {
    // Sound as Sendable: `generation` is touched only in `firstLook` and `look`, on the watch's queue.
    let scope: ChangeScope
    let collection: Collection
    let timeout: Duration
    /// The collection's generation at the last look: a new one may have renumbered the items.
    private var generation: Int?

    init(scope: ChangeScope, collection: Collection, timeout: Duration) {
        self.scope = scope
        self.collection = collection
        self.timeout = timeout
    }

    /// The collection the memory keyring stands for, in what the watch reports of a lock.
    static var collectionPath: String { "/org/freedesktop/secrets/collection/memory" }

    func subscribe(_ fire: @escaping @Sendable (LookAgain) -> Void) throws(KeyringError) -> @Sendable () -> Void {
        guard let cancel = collection.observeChanges({ fire(.look) }) else {
            throw .unsupported("this collection does not tell when it changes")
        }
        return cancel
    }

    func firstLook() throws(KeyringError) -> ChangeSnapshot { try read() }

    func look(after trigger: LookAgain, from last: ChangeSnapshot) throws(KeyringError) -> [ChangeSnapshot] { [try read()] }

    /// The items, each in the one collection (whose lock hides them where the collection hides
    /// locked items, as KeePassXC does), and the collection's lock state.
    private func read() throws(KeyringError) -> ChangeSnapshot {
        let seen = try collection.watchLook(matching: scope.attributes, timeout: timeout)
        var snapshot = ChangeSnapshot(
            collections: [Self.collectionPath: seen.isLocked ? .locked : .unlocked],
            mayRenumber: generation.map { $0 != seen.generation } ?? false)
        // A look that hid the items could not match them: the next one that shows them still may.
        if !(seen.isLocked && seen.hidesLockedItems) { generation = seen.generation }
        for found in seen.items where scope.owns(found.item) {
            snapshot.items[found.item.objectPath] = ChangeSnapshot.Entry(
                item: found.item, secretDigest: seen.isLocked ? nil : Digest.sha256Hex(Array(found.secret)),
                collection: seen.hidesLockedItems ? Self.collectionPath : nil)
        }
        return snapshot
    }
}
