#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One call's settings, as the `Keyring` it came through holds them.
package struct CallOptions: Sendable {
    /// The most time the whole call may take (`Keyring.timeout`).
    package var timeout: Duration
    /// Whether the call may show the unlock dialog (`Keyring.unlock`).
    package var unlock: UnlockPolicy

    package init(timeout: Duration, unlock: UnlockPolicy) {
        self.timeout = timeout
        self.unlock = unlock
    }
}

/// Where a `Keyring`'s items live: the Secret Service (`SecretServiceStore`), libsecret's file
/// backend (`FileLocalKeyring`) or a test's memory keyring (KeyringTesting). `Keyring.itemStore` picks
/// one; `Keyring` and `SecretStore` validate their arguments and hand each call to it.
///
/// The contract every store keeps, and its tests check on each:
/// - **Locked, unreachable and timed out are never absent.** A locked match is `.locked(itemExists:
///   true)`; a miss while a locked collection may hide matches (KeePassXC, oo7-daemon) is
///   `.locked(itemExists: false)`, never nil, empty or zero. A bus or daemon that does not answer is
///   `.noSessionBus`, `.noSecretService` or `.timedOut`, reported with the call's timeout.
/// - **One item per exact attribute set.** A write updates the item whose attributes are exactly
///   the given ones, and never one that merely includes them.
/// - **Oldest first.** Every list is in `ItemOrder.standard` order; "the" item is its first.
/// - **Prompts only under `options.unlock == .prompt`**, and never for a search, a status, a lock
///   state, a lock or a watch: reads, writes, listings and `unlockCollection` may.
/// - **Secrets are byte-exact**, NUL bytes and invalid UTF-8 included.
/// - **One deadline.** Every wait of a call, the unlock dialog's included, fits in `options.timeout`.
///
/// Arguments reach a store validated (`AttributeRules`): at least one attribute where the public
/// call requires one, text without NUL bytes, secrets within `SecretStore.maximumValueSize`. An
/// item's object path is checked by the store that reads it (only the Secret Service's must be one).
package protocol KeyringStore: Sendable {
    /// Every item whose attributes include `attributes`, locked ones too, oldest first. Never prompts.
    /// - Throws: `.locked(itemExists: false)` for a miss a locked collection may hide.
    func search(_ attributes: [String: String], _ options: CallOptions) throws(KeyringError) -> [KeyringItem]

    /// The matches `keep` accepts, none locked. Never prompts.
    /// - Throws: `.locked` for a kept locked match, or for no kept match while a locked collection may hide one.
    func searchProvingMiss(
        _ attributes: [String: String], keeping keep: (KeyringItem) -> Bool, _ options: CallOptions
    ) throws(KeyringError) -> [KeyringItem]

    /// `SecretStore.items`: every match, locked ones marked so, oldest first.
    /// - Throws: `.locked` for a locked match whose attributes are hidden, or for a miss a locked
    ///   collection may hide (after the unlock prompt `options` allows).
    func list(_ attributes: [String: String], _ options: CallOptions) throws(KeyringError) -> [KeyringItem]

    /// The secret of the oldest match; nil when nothing matches.
    /// - Throws: `.locked` when any match is locked, or for a miss a locked collection may hide.
    func lookup(_ attributes: [String: String], _ options: CallOptions) throws(KeyringError) -> Data?

    /// The oldest match with its secret, in one call; nil when nothing matches.
    /// - Throws: as `lookup`.
    func firstItem(_ attributes: [String: String], _ options: CallOptions) throws(KeyringError) -> (item: KeyringItem, secret: Data)?

    /// Every match with its secret, oldest first. With `lostAsEmpty`, a value the provider lost
    /// (`.valueLost`) is listed empty instead of failing the call.
    /// - Throws: `.locked` when any match is locked, or for a miss a locked collection may hide.
    func readAll(
        _ attributes: [String: String], lostAsEmpty: Bool, _ options: CallOptions
    ) throws(KeyringError) -> [(item: KeyringItem, secret: Data)]

    /// `readAll(lostAsEmpty: true)` for values that are not secrets (identifiers): a store may read
    /// them without encryption.
    func readAllNonSecret(_ attributes: [String: String], _ options: CallOptions) throws(KeyringError) -> [(
        item: KeyringItem, secret: Data
    )]

    /// The value when exactly one unlocked item matches; nil for none or several. For values that
    /// are not secrets. A locked match is nil on the Secret Service (the caller then reads fully)
    /// and `.locked` on a local collection.
    func soleSecret(_ attributes: [String: String], _ options: CallOptions) throws(KeyringError) -> Data?

    /// Stores under exactly `attributes`: the item with exactly these gets the new secret and label,
    /// else one is created in the default collection.
    /// - Throws: `.locked`, `.noDefaultCollection`, or another `KeyringError`.
    func store(
        _ secret: Data, attributes: [String: String], label: String, contentType: String, _ options: CallOptions
    ) throws(KeyringError)

    /// Runs `body` under the lock every creation of an item matching `attributes` takes, in this
    /// process and in every other client of the store.
    /// - Throws: `.timedOut` when the lock is not free in time, or what `body` throws.
    func withCreationLock<T>(
        for attributes: [String: String], _ options: CallOptions, _ body: () throws(KeyringError) -> T
    ) throws(KeyringError) -> T

    /// Creates an item with `attributes()` (built under the creation lock) unless one matching
    /// `matching` exists; "the" existing one is first in `order`.
    /// - Throws: `.locked` when a match is locked (nothing is created), `.noDefaultCollection`, or another `KeyringError`.
    func insertIfAbsent(
        _ secret: Data, attributes: () -> [String: String], matching: [String: String], label: String, contentType: String,
        order: ItemOrder, _ options: CallOptions
    ) throws(KeyringError) -> InsertOutcome

    /// Deletes every unlocked match; returns how many.
    /// - Throws: `.locked` when a match is locked, or for a miss a locked collection may hide; nothing is deleted then.
    func delete(_ attributes: [String: String], _ options: CallOptions) throws(KeyringError) -> Int

    /// The secret of one item `search` returned; nil when it is gone.
    /// - Throws: `.locked` when its collection is locked or may hide it; `.invalidArgument`, on
    ///   the Secret Service, for an item whose path is no D-Bus object path (a local collection's).
    func secret(of item: KeyringItem, _ options: CallOptions) throws(KeyringError) -> Data?

    /// Deletes exactly one item `search` returned, and nothing else; a vanished item succeeds.
    /// - Throws: `.locked` when its collection is locked or may hide it; `.invalidArgument`, on
    ///   the Secret Service, for an item whose path is no D-Bus object path (a local collection's).
    func delete(item: KeyringItem, _ options: CallOptions) throws(KeyringError)

    /// The store's reachability and its default collection's state. Never throws and never prompts.
    func status(_ options: CallOptions) -> ServiceStatus

    /// Whether the default collection is locked. Never prompts.
    func isLocked(_ options: CallOptions) throws(KeyringError) -> Bool

    /// Locks the default collection.
    /// - Throws: `.unsupported` for a store without a locked state (the file backend).
    func lockCollection(_ options: CallOptions) throws(KeyringError)

    /// Unlocks the default collection through the unlock prompt, as `options.unlock` allows.
    /// - Throws: `.locked(itemExists: false, unlock:)` when it stays locked.
    func unlockCollection(_ options: CallOptions) throws(KeyringError)

    /// The item `wrapper` reads and writes, with its value.
    /// - Throws: `.locked` for a locked match, or for a miss a locked collection may hide.
    func storedItem(of wrapper: SecretStore, _ options: CallOptions) throws(KeyringError) -> (item: KeyringItem, value: Data)?

    /// One key of `wrapper`'s item; nil when there is no item or it lacks the key.
    /// - Throws: as `storedItem`.
    func data(forKey key: SecretStore.Key, of wrapper: SecretStore, _ options: CallOptions) throws(KeyringError) -> Data?

    /// Writes one key of `wrapper`'s item, creating it (once, across processes) when absent.
    /// - Throws: `.locked`, `.ambiguousItem`, `.noDefaultCollection`, or another `KeyringError`.
    func write(
        _ payload: SecretStore.Payload, forKey key: SecretStore.Key, of wrapper: SecretStore, _ options: CallOptions
    ) throws(KeyringError)

    /// Removes `wrapper`'s item and its exact copies, and nothing else; an absent item succeeds.
    /// - Throws: `.locked` or `.ambiguousItem`; nothing is removed then.
    func reset(_ wrapper: SecretStore, _ options: CallOptions) throws(KeyringError)

    /// Whether `wrapper`'s item (or, without one, the default collection) is locked. Never prompts.
    func isLocked(of wrapper: SecretStore, _ options: CallOptions) throws(KeyringError) -> Bool

    /// Starts the one change watch (`ChangeWatch`) on `scope`, over this store's `ChangeSource`,
    /// its first look made before this returns; the closure stops it.
    func startWatch(
        _ scope: ChangeScope, _ options: CallOptions, _ continuation: AsyncStream<KeyringChange>.Continuation
    ) throws(KeyringError) -> @Sendable () -> Void

    /// Whether the environment this store stands for names a session bus.
    var isSessionBusConfigured: Bool { get }
}

extension Keyring {
    /// The store this keyring's calls go to; the one place that chooses it. `.automatic` is
    /// resolved here at each call, as libsecret resolves it from the environment.
    package var itemStore: any KeyringStore {
        if let memory { return memory }
        return backend.resolved == .file ? FileLocalKeyring() : SecretServiceStore()
    }

    /// `Keyring.isSessionBusConfigured`, or what the in-memory keyring pretends.
    package var isSessionBusConfigured: Bool { itemStore.isSessionBusConfigured }

    /// This keyring's settings, as each store call takes them.
    var options: CallOptions { CallOptions(timeout: timeout, unlock: unlock) }
}
