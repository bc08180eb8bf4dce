#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// The async variants run the blocking calls on a private queue and honour task cancellation
// (which ends a pending call with `KeyringError.cancelled`).

extension Keyring {
    /// Async `search(_:)`; see there.
    public func search(_ attributes: [String: String]) async throws(KeyringError) -> [KeyringItem] {
        try await Offload.run { cancellation throws(KeyringError) in try self.search(attributes, cancellation: cancellation) }
    }

    /// Async `lookup(_:)`; see there.
    public func lookup(_ attributes: [String: String]) async throws(KeyringError) -> Data? {
        try await Offload.run { cancellation throws(KeyringError) in try self.lookup(attributes, cancellation: cancellation) }
    }

    /// Async `store(_:attributes:label:contentType:)`; see there.
    public func store(
        _ secret: Data, attributes: [String: String], label: String, contentType: String = "text/plain"
    ) async throws(KeyringError) {
        try await Offload.run { cancellation throws(KeyringError) in
            try self.store(secret, attributes: attributes, label: label, contentType: contentType, cancellation: cancellation)
        }
    }

    /// Async `firstItem(_:)`; see there.
    public func firstItem(_ attributes: [String: String]) async throws(KeyringError) -> (item: KeyringItem, secret: Data)? {
        try await Offload.run { cancellation throws(KeyringError) in try self.firstItem(attributes, cancellation: cancellation) }
    }

    /// Async `delete(_:)`; see there.
    @discardableResult
    public func delete(_ attributes: [String: String]) async throws(KeyringError) -> Int {
        try await Offload.run { cancellation throws(KeyringError) in try self.delete(attributes, cancellation: cancellation) }
    }

    /// Async `status()`; see there.
    public func status() async -> ServiceStatus {
        (try? await Offload.run { _ throws(KeyringError) in self.status() })
            ?? ServiceStatus(isReachable: false, provider: nil, hasDefaultCollection: false, isLocked: false,
                             defaultCollectionLabel: nil, problem: .cancelled)
    }
}

extension SecretStore {
    /// Async `object(forKey:)`; cancelling the task cancels the call.
    public func object(forKey key: Key) async throws(KeyringError) -> String? {
        try await Offload.run { cancellation throws(KeyringError) in try self.object(forKey: key, cancellation: cancellation) }
    }

    /// Async `setObject(_:forKey:)`; cancelling the task cancels the call.
    public func setObject(_ value: String, forKey key: Key) async throws(KeyringError) {
        try await Offload.run { cancellation throws(KeyringError) in
            try self.write(key == .valueData ? .secret(Data(value.utf8), "text/plain") : .text(value), forKey: key, cancellation: cancellation)
        }
    }

    /// Async `data(forKey:)`; cancelling the task cancels the call.
    public func data(forKey key: Key) async throws(KeyringError) -> Data? {
        try await Offload.run { cancellation throws(KeyringError) in try self.data(forKey: key, cancellation: cancellation) }
    }

    /// Async `setData(_:forKey:)`; cancelling the task cancels the call.
    public func setData(_ data: Data, forKey key: Key) async throws(KeyringError) {
        try await Offload.run { cancellation throws(KeyringError) in
            try self.write(try Self.payload(data, forKey: key), forKey: key, cancellation: cancellation)
        }
    }

    /// Async `reset()`; cancelling the task cancels the call.
    public func reset() async throws(KeyringError) {
        try await Offload.run { cancellation throws(KeyringError) in try self.reset(cancellation: cancellation) }
    }
}
