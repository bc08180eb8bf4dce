#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// The async variants run the blocking calls on a private queue and honour task cancellation
// (which ends a pending call with `KeyringError.cancelled`).

extension Keyring {
    /// Async `search(_:)`: every item whose attributes include `attributes`, locked ones too.
    /// - Parameter attributes: the attributes to match.
    /// - Returns: the matching items' metadata, oldest first.
    /// - Throws: `KeyringError`; `.cancelled` when the task is cancelled.
    public func search(_ attributes: [String: String]) async throws(KeyringError) -> [KeyringItem] {
        try await Offload.run { cancellation throws(KeyringError) in try self.search(attributes, cancellation: cancellation) }
    }

    /// Async `lookup(_:)`: the secret of the oldest readable matching item.
    /// - Parameter attributes: the attributes to match; at least one.
    /// - Returns: the secret bytes, or nil when nothing matches.
    /// - Throws: `KeyringError.locked` rather than nil for a locked match; `.cancelled` on task cancellation.
    public func lookup(_ attributes: [String: String]) async throws(KeyringError) -> Data? {
        try await Offload.run { cancellation throws(KeyringError) in try self.lookup(attributes, cancellation: cancellation) }
    }

    /// Async `store(_:attributes:label:contentType:)`: stores `secret` under exactly `attributes`.
    /// - Parameters:
    ///   - secret: the bytes to store.
    ///   - attributes: the item's attributes; at least one.
    ///   - label: the label shown in keyring managers.
    ///   - contentType: the secret's MIME type.
    /// - Throws: `KeyringError`; `.cancelled` when the task is cancelled.
    public func store(
        _ secret: Data, attributes: [String: String], label: String, contentType: String = "text/plain"
    ) async throws(KeyringError) {
        try await Offload.run { cancellation throws(KeyringError) in
            try self.store(secret, attributes: attributes, label: label, contentType: contentType, cancellation: cancellation)
        }
    }

    /// Async `firstItem(_:)`: the oldest readable matching item with its secret.
    /// - Parameter attributes: the attributes to match; at least one.
    /// - Returns: the item and its secret, or nil when nothing matches.
    /// - Throws: `KeyringError`; `.cancelled` when the task is cancelled.
    public func firstItem(_ attributes: [String: String]) async throws(KeyringError) -> (item: KeyringItem, secret: Data)? {
        try await Offload.run { cancellation throws(KeyringError) in try self.firstItem(attributes, cancellation: cancellation) }
    }

    /// Async `delete(_:)`: deletes every unlocked matching item.
    /// - Parameter attributes: the attributes to match; at least one.
    /// - Returns: how many items were deleted.
    /// - Throws: `KeyringError.locked` when a match is locked; `.cancelled` on task cancellation.
    @discardableResult
    public func delete(_ attributes: [String: String]) async throws(KeyringError) -> Int {
        try await Offload.run { cancellation throws(KeyringError) in try self.delete(attributes, cancellation: cancellation) }
    }

    /// Async `status()`: whether the service answers, its provider and the default collection's state.
    /// - Returns: the status; problems are in `problem` (`.cancelled` when the task was cancelled).
    public func status() async -> ServiceStatus {
        (try? await Offload.run { _ throws(KeyringError) in self.status() })
            ?? ServiceStatus(
                isReachable: false, provider: nil, hasDefaultCollection: false, isLocked: false,
                defaultCollectionLabel: nil, problem: .cancelled)
    }
}

extension SecretStore {
    /// Async `object(forKey:)`; cancelling the task cancels the call.
    /// - Parameter key: which part of the item to read.
    /// - Returns: the value, or nil when there is no item.
    /// - Throws: `KeyringError.locked` rather than nil for a locked item; `.cancelled` on task cancellation.
    public func object(forKey key: Key) async throws(KeyringError) -> String? {
        try await Offload.run { cancellation throws(KeyringError) in try self.object(forKey: key, cancellation: cancellation) }
    }

    /// Async `setObject(_:forKey:)`; cancelling the task cancels the call.
    /// - Parameters:
    ///   - value: the new value.
    ///   - key: which part of the item to write.
    /// - Throws: `KeyringError`; `.cancelled` when the task is cancelled.
    public func setObject(_ value: String, forKey key: Key) async throws(KeyringError) {
        try await Offload.run { cancellation throws(KeyringError) in
            try self.write(
                key == .valueData ? .secret(Data(value.utf8), "text/plain") : .text(value), forKey: key, cancellation: cancellation)
        }
    }

    /// Async `data(forKey:)`; cancelling the task cancels the call.
    /// - Parameter key: which part of the item to read.
    /// - Returns: the bytes, or nil when there is no item.
    /// - Throws: `KeyringError.locked` rather than nil for a locked item; `.cancelled` on task cancellation.
    public func data(forKey key: Key) async throws(KeyringError) -> Data? {
        try await Offload.run { cancellation throws(KeyringError) in try self.data(forKey: key, cancellation: cancellation) }
    }

    /// Async `setData(_:forKey:)`; cancelling the task cancels the call.
    /// - Parameters:
    ///   - data: the bytes to store.
    ///   - key: which part of the item to write.
    /// - Throws: `KeyringError`; `.cancelled` when the task is cancelled.
    public func setData(_ data: Data, forKey key: Key) async throws(KeyringError) {
        try await Offload.run { cancellation throws(KeyringError) in
            try self.write(try Self.payload(data, forKey: key), forKey: key, cancellation: cancellation)
        }
    }

    /// Async `reset()`; cancelling the task cancels the call.
    /// - Throws: `KeyringError.locked` when the item is locked; `.cancelled` when the task is cancelled.
    public func reset() async throws(KeyringError) {
        try await Offload.run { cancellation throws(KeyringError) in try self.reset(cancellation: cancellation) }
    }
}
