#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One item of a local collection, with its secret.
package struct LocalItem: Sendable {
    package let item: KeyringItem
    package let secret: Data

    package init(item: KeyringItem, secret: Data) {
        self.item = item
        self.secret = secret
    }
}

/// A collection of items that lives in this process's reach rather than behind the Secret Service:
/// libsecret's file backend, or KeyringTesting's in-memory keyring. Each is a `KeyringStore` whose
/// operations are written once, for both, on `run` (Keyring+LocalCollection.swift).
package protocol LocalKeyring: KeyringStore {
    /// What `run` hands its body: the collection as it is during one operation.
    associatedtype Items: LocalItems

    /// Runs one operation within `timeout`. With `exclusive`, no other change interleaves.
    /// `prompt` is the operation's unlock policy, nil for one that never prompts (a search, a status).
    func run<T>(
        timeout: Duration, exclusive: Bool, prompt: UnlockPolicy?, _ body: (borrowing Items) throws(KeyringError) -> T
    ) throws(KeyringError) -> T

    /// Runs `body` under the lock every creation in this collection takes.
    func withCreationLock<T>(timeout: Duration, _ body: () throws(KeyringError) -> T) throws(KeyringError) -> T

    /// What `Keyring.status()` reports for this collection.
    func status(timeout: Duration) -> ServiceStatus

    /// Locks the collection (`Keyring.lockCollection()`). The file backend, which has no locked
    /// state, throws `.unsupported`.
    func lock(timeout: Duration) throws(KeyringError)

    /// Whether the environment this collection stands for names a session bus
    /// (`Keyring.isSessionBusConfigured` for the file backend).
    var isSessionBusConfigured: Bool { get }

    /// A directory of this collection's own, for what a resolver would otherwise keep in the user's
    /// state and runtime directories (its backup file and first-run lock): the memory keyring's
    /// temporary one, so that a test never writes a backup a real run of the app would read.
    /// nil: the standard directories (the file backend).
    var privateStateDirectory: String? { get }

    /// Calls `onChange` after each change to the collection (its items or its lock state), with no
    /// lock of the collection held, until the returned closure runs. nil when the collection cannot
    /// tell: libsecret's file backend, which another process may write, is followed by inotify.
    func observeChanges(_ onChange: @escaping @Sendable () -> Void) -> (@Sendable () -> Void)?

    /// What a change watch sees of the items matching `attributes`: read with no prompt, and not
    /// counted as a call of the app's (the memory keyring's injected faults are left for those).
    func watchLook(matching attributes: [String: String], timeout: Duration) throws(KeyringError) -> LocalWatchLook
}

/// The collection as a change watch looked at it.
package struct LocalWatchLook: Sendable {
    /// Whether the collection was locked.
    package var isLocked: Bool
    /// Whether a locked collection hides its items (as KeePassXC does): then none are listed.
    package var hidesLockedItems: Bool
    /// The matching items, with their secrets (empty while locked).
    package var items: [LocalItem]
    /// Changes at each start of a collection that renumbers its items, so a watch can tell a
    /// renumbered item from a deleted one and a created one.
    package var generation: Int

    package init(isLocked: Bool, hidesLockedItems: Bool, items: [LocalItem], generation: Int = 0) {
        self.isLocked = isLocked
        self.hidesLockedItems = hidesLockedItems
        self.items = items
        self.generation = generation
    }
}

extension LocalKeyring {
    /// The file backend's answer: no in-process notice of changes.
    package func observeChanges(_ onChange: @escaping @Sendable () -> Void) -> (@Sendable () -> Void)? { nil }

    /// A search with no prompt.
    package func watchLook(matching attributes: [String: String], timeout: Duration) throws(KeyringError) -> LocalWatchLook {
        try run(timeout: timeout, exclusive: false, prompt: nil) { items throws(KeyringError) in
            LocalWatchLook(
                isLocked: items.isLocked, hidesLockedItems: items.hidesLockedItems, items: try items.listed(matching: attributes))
        }
    }
}

/// The collection during one operation of `LocalKeyring.run`.
package protocol LocalItems {
    /// True when the collection is locked: what it lists is marked locked and its secrets cannot be read.
    var isLocked: Bool { get }
    /// How this operation's unlock prompt ended, when the collection was locked at its start.
    var unlockOutcome: UnlockOutcome { get }
    /// True when a locked collection's items are hidden from searches (as KeePassXC hides them):
    /// a miss then does not prove absence. False when they are listed, marked locked.
    var hidesLockedItems: Bool { get }
    /// True when item paths are numbered anew at each start (the memory keyring as KWallet):
    /// an earlier listing's path may name another item (`ItemHandle`).
    var renumbersItems: Bool { get }
    /// Every item, oldest first. A locked collection that may not be listed throws `.locked`.
    func listed() throws(KeyringError) -> [LocalItem]
    /// The items whose attributes include `attributes`, oldest first.
    func listed(matching attributes: [String: String]) throws(KeyringError) -> [LocalItem]
    /// Stores under exactly `attributes`: the item with exactly these gets the new label and secret.
    func store(_ attributes: [String: String], label: String, secret: Data, contentType: String) throws(KeyringError)
    /// Removes exactly the items whose attributes are `attributes`.
    func remove(exactly attributes: [String: String]) throws(KeyringError)
    /// Removes the one item `objectPath` names; nothing when it is gone.
    func remove(objectPath: String) throws(KeyringError)
    /// Removes every item whose attributes include `attributes`; returns how many.
    func removeAll(_ attributes: [String: String]) throws(KeyringError) -> Int
}

extension LocalItems {
    /// The matches, none locked: any locked match, or a miss in a locked collection that hides
    /// its items, is `.locked`. A miss where locked items are listed is absent, as on gnome-keyring.
    func readable(_ attributes: [String: String]) throws(KeyringError) -> [LocalItem] {
        let found = try listed(matching: attributes)
        if found.contains(where: \.item.isLocked) { throw .locked(itemExists: true) }
        if found.isEmpty && missCouldBeHidden { throw .locked(itemExists: false) }
        return found
    }

    /// True when a miss does not prove absence: the collection is locked and hides its items.
    var missCouldBeHidden: Bool { isLocked && hidesLockedItems }
}
