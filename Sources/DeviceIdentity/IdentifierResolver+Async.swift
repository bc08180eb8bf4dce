import Keyring

// Every public resolver call that touches a store has an async twin here, and each twin is one
// line: it runs its sync call itself through Keyring's `Offload.run` (a private queue, never
// Swift's cooperative pool), so the two cannot drift. Task cancellation cancels the keyring call
// in flight and every later step (lock waits included), which then throws
// `IdentityError.keyring(.cancelled)`. The in-memory fast path of `identifier()` does not hop.
//
// No twin: the initializers and `backupPath` (they touch nothing), and the pure or local helpers
// `GenerationPolicy.generate()`, `AppSpecificMachineID.plainHex` and `StorageDiagnostics.check`
// (small local files, no D-Bus, no locks).

extension IdentifierResolver {
    /// Runs the sync call `work` through the one offload helper.
    private func offload<T: Sendable>(_ work: @escaping @Sendable () throws(IdentityError) -> T) async throws(IdentityError) -> T {
        try await Offload.run(orCancelled: .keyring(.cancelled), work)
    }

    /// Async `identifier()`; served from memory without a thread hop once resolved.
    /// - Returns: the canonical identifier.
    /// - Throws: `IdentityError` when no store can answer and absence is not proven.
    public func identifier() async throws(IdentityError) -> String {
        if let cached = cache.value { return cached }
        return try await offload { () throws(IdentityError) in try self.identifier() }
    }

    /// Async `resolve()`: reads every store, repairs, and creates only on a proven absence.
    /// - Returns: the identifier with its provenance, stores, repairs and conflicts.
    /// - Throws: `IdentityError` when no store can answer and absence is not proven.
    public func resolve() async throws(IdentityError) -> Resolution {
        try await offload { () throws(IdentityError) in try self.resolve() }
    }

    /// Async `refresh()`: forgets the in-memory copy and resolves again.
    /// - Returns: the fresh resolution.
    /// - Throws: as `resolve()`.
    public func refresh() async throws(IdentityError) -> Resolution {
        try await offload { () throws(IdentityError) in try self.refresh() }
    }

    /// Async `dryRun()`: what `resolve()` would do, writing and removing nothing.
    /// - Returns: the resolution that would result; `isDryRun` is true.
    /// - Throws: as `resolve()`.
    public func dryRun() async throws(IdentityError) -> Resolution {
        try await offload { () throws(IdentityError) in try self.dryRun() }
    }

    /// Async `migrate(dryRun:)`: adopts a legacy identifier when this scope has none.
    /// - Parameter dryRun: report without writing or removing anything.
    /// - Returns: what happened, including rejected sources.
    /// - Throws: `IdentityError` when a store or a source cannot be read.
    public func migrate(dryRun: Bool = false) async throws(IdentityError) -> MigrationReport {
        try await offload { () throws(IdentityError) in try self.migrate(dryRun: dryRun) }
    }

    /// Async `reset()`: removes this scope's identifier from every store.
    /// - Throws: `IdentityError.keyring` when the keyring is locked or does not answer.
    public func reset() async throws(IdentityError) {
        try await offload { () throws(IdentityError) in try self.reset() }
    }
}
