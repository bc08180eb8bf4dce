// Lock state: asking whether a collection is locked, and locking or unlocking the default one.
// Each store does it its own way (`KeyringStore`); the Secret Service's lives in
// Internals/SecretService/ServiceCall+Prompt.swift, with the unlock-on-demand of every other call.

extension Keyring {
    /// Whether the default collection (the one `store` and a first `SecretStore` write use) is
    /// locked. Reads only its `Locked` property: never a secret, never a prompt, whatever `unlock` says.
    ///
    /// The file backend has no locked state: there this is false once the keyring file opens with its key.
    /// - Returns: true when the default collection is locked.
    /// - Throws: `KeyringError.noDefaultCollection` when the service has none, `.noSecretService`,
    ///   `.noSessionBus`, `.timedOut`, or (file backend) the file's errors such as `.wrongKey`.
    public func isLocked() throws(KeyringError) -> Bool {
        try itemStore.isLocked(options)
    }

    /// Locks the default collection: its secrets cannot be read until it is unlocked again (by
    /// `unlockCollection()`, by a call under `UnlockPolicy.prompt`, or by the user). Locking a locked
    /// collection succeeds and changes nothing. Never shows a dialog: providers lock at once
    /// (KeePassXC's lock prompt completes without one).
    /// - Throws: `KeyringError.noDefaultCollection` when the service has none, `.unsupported` on
    ///   the file backend (it has no locked state: its file is always encrypted, and its key comes
    ///   from the Secret portal whenever the app runs), `.serviceFailure` when the service leaves
    ///   the collection unlocked, or another `KeyringError`.
    public func lockCollection() throws(KeyringError) {
        try itemStore.lockCollection(options)
    }

    /// Unlocks the default collection through the service's unlock prompt (the desktop's dialog,
    /// where the user types the keyring password), within `timeout`. An unlocked collection
    /// succeeds at once, without a prompt. This is the same unlock every other call makes on
    /// demand, asked for up front.
    ///
    /// The file backend has no locked state: there this succeeds once the keyring file opens with its key.
    /// - Throws: `KeyringError.locked(itemExists: false, unlock:)`: `.notAsked` under
    ///   `unlock: .never` (no prompt is shown) or when the service offered no prompt,
    ///   `.dismissed` when the user cancelled it or no dialog could be shown, `.unanswered` when
    ///   nobody answered before the timeout; `.noDefaultCollection`, `.cancelled`, or another `KeyringError`.
    public func unlockCollection() throws(KeyringError) {
        try itemStore.unlockCollection(options)
    }
}

extension SecretStore {
    /// Whether the collection that holds this wrapper's item is locked, so that reading or
    /// writing it would need an unlock. Never reads a secret and never prompts.
    ///
    /// It is true when any item this wrapper would read is locked (a locked match always wins,
    /// as in every read). When the wrapper has no item it reports the default collection, where
    /// its first write goes. KeePassXC hides a locked database's items: an item kept in another,
    /// locked database is not seen, and the default collection's state is reported. KeePassXC with
    /// `UnlockBeforeSearch=true` (its default) may show its own unlock dialog for the search this
    /// makes while a database is locked, as for any read. The file backend has no locked state: false.
    /// - Returns: true when the wrapper's item (or, without one, the default collection) is locked.
    /// - Throws: `KeyringError.noDefaultCollection` when there is no item and no default
    ///   collection, or another `KeyringError`.
    public func isLocked() throws(KeyringError) -> Bool {
        try keyring.itemStore.isLocked(of: self, keyring.options)
    }
}

extension Keyring {
    /// Why `lockCollection()` failed when the service dismissed its own lock prompt.
    static let lockRefused =
        "the service refused to lock the default collection (its lock prompt was dismissed): close the keyring manager's open dialogs, such as a pending unlock dialog, then retry"
}
