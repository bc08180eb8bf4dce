// The async twins of Keyring+LockState.swift, one line each through `Offload.run`, as in
// Keyring+Async.swift: a twin runs its sync call itself, so the two cannot drift.

extension Keyring {
    /// Async `isLocked()`: whether the default collection is locked, never prompting.
    /// - Returns: true when the default collection is locked (never on the file backend).
    /// - Throws: `KeyringError.noDefaultCollection`, another `KeyringError`; `.cancelled` on task cancellation.
    public func isLocked() async throws(KeyringError) -> Bool {
        try await Offload.run(orCancelled: .cancelled) { () throws(KeyringError) in try self.isLocked() }
    }

    /// Async `lockCollection()`: locks the default collection; a locked one stays as it is.
    /// - Throws: `KeyringError.unsupported` on the file backend, another `KeyringError`; `.cancelled` on task cancellation.
    public func lockCollection() async throws(KeyringError) {
        try await Offload.run(orCancelled: .cancelled) { () throws(KeyringError) in try self.lockCollection() }
    }

    /// Async `unlockCollection()`: unlocks the default collection through the service's prompt, within the timeout.
    /// - Throws: `KeyringError.locked(itemExists: false, unlock:)` when it stays locked, another
    ///   `KeyringError`; `.cancelled` on task cancellation (an open prompt is closed, except on gnome-keyring).
    public func unlockCollection() async throws(KeyringError) {
        try await Offload.run(orCancelled: .cancelled) { () throws(KeyringError) in try self.unlockCollection() }
    }
}

extension SecretStore {
    /// Async `isLocked()`: whether the collection holding this wrapper's item (without one, the
    /// default collection) is locked, never prompting.
    /// - Returns: true when it is locked.
    /// - Throws: `KeyringError`; `.cancelled` on task cancellation.
    public func isLocked() async throws(KeyringError) -> Bool {
        try await Offload.run(orCancelled: .cancelled) { () throws(KeyringError) in try self.isLocked() }
    }
}
