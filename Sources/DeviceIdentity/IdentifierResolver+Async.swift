import Dispatch
import Keyring

// The async variants run the blocking work (D-Bus, flock, fsync) on a private queue, never on
// Swift's cooperative pool. The in-memory fast path of `identifier()` does not hop at all.

extension IdentifierResolver {
    private static let queue = DispatchQueue(label: "DeviceIdentity.blocking", attributes: .concurrent)

    /// Runs `work` on the private queue. Task cancellation cancels the keyring call in flight and
    /// every later step (lock waits included), which then throws `IdentityError.keyring(.cancelled)`.
    private func offload<T: Sendable>(_ work: @escaping @Sendable () throws(IdentityError) -> T) async throws(IdentityError) -> T {
        let token = OperationCancellation()
        let result: Result<T, IdentityError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                Self.queue.async {
                    if token.isCancelled { return continuation.resume(returning: .failure(.keyring(.cancelled))) }
                    continuation.resume(returning: token.run { Result { () throws(IdentityError) -> T in try work() } })
                }
            }
        } onCancel: {
            token.cancel()
        }
        return try result.get()
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
