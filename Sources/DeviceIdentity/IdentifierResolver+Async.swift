import Dispatch

// The async variants run the blocking work (D-Bus, flock, fsync) on a private queue, never on
// Swift's cooperative pool. The in-memory fast path of `identifier()` does not hop at all.

extension IdentifierResolver {
    private static let queue = DispatchQueue(label: "DeviceIdentity.blocking", attributes: .concurrent)

    private func offload<T: Sendable>(_ work: @escaping @Sendable () throws(IdentityError) -> T) async throws(IdentityError) -> T {
        let result: Result<T, IdentityError> = await withCheckedContinuation { continuation in
            Self.queue.async { continuation.resume(returning: Result { () throws(IdentityError) -> T in try work() }) }
        }
        return try result.get()
    }

    /// Async `identifier()`; served from memory without a thread hop once resolved.
    public func identifier() async throws(IdentityError) -> String {
        if let cached = cache.value { return cached }
        return try await offload { () throws(IdentityError) in try self.identifier() }
    }

    /// Async `resolve()`; see there.
    public func resolve() async throws(IdentityError) -> Resolution {
        try await offload { () throws(IdentityError) in try self.resolve() }
    }

    /// Async `refresh()`; see there.
    public func refresh() async throws(IdentityError) -> Resolution {
        try await offload { () throws(IdentityError) in try self.refresh() }
    }

    /// Async `migrate(dryRun:)`; see there.
    public func migrate(dryRun: Bool = false) async throws(IdentityError) -> MigrationReport {
        try await offload { () throws(IdentityError) in try self.migrate(dryRun: dryRun) }
    }

    /// Async `reset()`; see there.
    public func reset() async throws(IdentityError) {
        try await offload { () throws(IdentityError) in try self.reset() }
    }
}
