#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// Every public call that talks to the keyring has an async twin here, and each twin is one line:
// it runs its sync call itself through `Offload.run`, on a private queue, so the two cannot
// drift. Task cancellation ends a pending call with `KeyringError.cancelled`.
//
// No twin: `Keyring.isSessionBusConfigured` (reads the environment only), the initializers (they
// touch nothing), and `KeyringItem.isOlder` (pure).

extension Keyring {
    /// Async `search(_:)`: every item whose attributes include `attributes`, locked ones too.
    /// - Parameter attributes: the attributes to match.
    /// - Returns: the matching items' metadata, oldest first.
    /// - Throws: `KeyringError`; `.cancelled` when the task is cancelled.
    public func search(_ attributes: [String: String]) async throws(KeyringError) -> [KeyringItem] {
        try await Offload.run(orCancelled: .cancelled) { () throws(KeyringError) in try self.search(attributes) }
    }

    /// Async `lookup(_:)`: the secret of the oldest readable matching item.
    /// - Parameter attributes: the attributes to match; at least one.
    /// - Returns: the secret bytes, or nil when nothing matches.
    /// - Throws: `KeyringError.locked` rather than nil for a locked match; `.cancelled` on task cancellation.
    public func lookup(_ attributes: [String: String]) async throws(KeyringError) -> Data? {
        try await Offload.run(orCancelled: .cancelled) { () throws(KeyringError) in try self.lookup(attributes) }
    }

    /// Async `firstItem(_:)`: the oldest readable matching item with its secret.
    /// - Parameter attributes: the attributes to match; at least one.
    /// - Returns: the item and its secret, or nil when nothing matches.
    /// - Throws: `KeyringError`; `.cancelled` when the task is cancelled.
    public func firstItem(_ attributes: [String: String]) async throws(KeyringError) -> (item: KeyringItem, secret: Data)? {
        try await Offload.run(orCancelled: .cancelled) { () throws(KeyringError) in try self.firstItem(attributes) }
    }

    /// Async `readAll(_:)`: every matching item with its secret, oldest first.
    /// - Parameter attributes: the attributes to match; at least one.
    /// - Returns: the items and their secret bytes; empty when nothing matches.
    /// - Throws: `KeyringError.locked` when any match is locked; `.cancelled` on task cancellation.
    public func readAll(_ attributes: [String: String]) async throws(KeyringError) -> [(item: KeyringItem, secret: Data)] {
        try await Offload.run(orCancelled: .cancelled) { () throws(KeyringError) in try self.readAll(attributes) }
    }

    /// Async `store(_:attributes:label:contentType:)`: stores `secret` under exactly `attributes`.
    /// - Parameters:
    ///   - secret: the bytes to store.
    ///   - attributes: the item's attributes; at least one.
    ///   - label: the label shown in keyring managers.
    ///   - contentType: the secret's MIME type; nil chooses as the synchronous `store` does.
    /// - Throws: `KeyringError`; `.cancelled` when the task is cancelled.
    public func store(
        _ secret: Data, attributes: [String: String], label: String, contentType: String? = nil
    ) async throws(KeyringError) {
        try await Offload.run(orCancelled: .cancelled) { () throws(KeyringError) in
            try self.store(secret, attributes: attributes, label: label, contentType: contentType)
        }
    }

    /// Async `insertIfAbsent(_:attributes:matching:label:contentType:)`: creates the item only
    /// when none matching `matching` exists, else returns the existing one unchanged.
    /// - Parameters:
    ///   - secret: the bytes to store when absent.
    ///   - attributes: the new item's attributes; at least one.
    ///   - matching: the attributes that make an item count as present; nil means `attributes`.
    ///   - label: the label shown in keyring managers.
    ///   - contentType: the secret's MIME type; nil chooses as the synchronous `store` does.
    /// - Returns: `.inserted`, or `.existing` with the oldest matching item and its secret.
    /// - Throws: `KeyringError.locked` when a match is locked; `.cancelled` on task cancellation.
    public func insertIfAbsent(
        _ secret: Data, attributes: [String: String], matching: [String: String]? = nil, label: String,
        contentType: String? = nil
    ) async throws(KeyringError) -> InsertOutcome {
        try await Offload.run(orCancelled: .cancelled) { () throws(KeyringError) in
            try self.insertIfAbsent(secret, attributes: attributes, matching: matching, label: label, contentType: contentType)
        }
    }

    /// Async `withCreationLock(for:_:)`: runs `body` on the private queue while holding the lock
    /// every creation of an item matching `attributes` takes. `body` is synchronous, so the lock
    /// is never held across a suspension.
    /// - Parameters:
    ///   - attributes: the attributes that name the lock; at least one.
    ///   - body: the work to do under the lock.
    /// - Returns: what `body` returns.
    /// - Throws: `KeyringError.timedOut` when the lock is not free in time, what `body` throws, or `.cancelled`.
    public func withCreationLock<T: Sendable>(
        for attributes: [String: String], _ body: @escaping @Sendable () throws(KeyringError) -> T
    ) async throws(KeyringError) -> T {
        try await Offload.run(orCancelled: .cancelled) { () throws(KeyringError) in try self.withCreationLock(for: attributes, body) }
    }

    /// Async `delete(_:)`: deletes every unlocked matching item.
    /// - Parameter attributes: the attributes to match; at least one.
    /// - Returns: how many items were deleted.
    /// - Throws: `KeyringError.locked` when a match is locked; `.cancelled` on task cancellation.
    @discardableResult
    public func delete(_ attributes: [String: String]) async throws(KeyringError) -> Int {
        try await Offload.run(orCancelled: .cancelled) { () throws(KeyringError) in try self.delete(attributes) }
    }

    /// Async `secret(of:)`: the secret of one item from `search(_:)`.
    /// - Parameter item: an item returned by `search(_:)`.
    /// - Returns: the secret bytes, or nil when the item no longer exists.
    /// - Throws: `KeyringError.locked(itemExists: true)` when its collection is locked; `.cancelled` on task cancellation.
    public func secret(of item: KeyringItem) async throws(KeyringError) -> Data? {
        try await Offload.run(orCancelled: .cancelled) { () throws(KeyringError) in try self.secret(of: item) }
    }

    /// Async `delete(item:)`: deletes exactly one item from `search(_:)`.
    /// - Parameter item: an item returned by `search(_:)`.
    /// - Throws: `KeyringError.locked` when its collection is locked; `.cancelled` on task cancellation.
    public func delete(item: KeyringItem) async throws(KeyringError) {
        try await Offload.run(orCancelled: .cancelled) { () throws(KeyringError) in try self.delete(item: item) }
    }

    /// Async `status()`: whether the service answers, its provider and the default collection's state.
    /// - Returns: the status; problems are in `problem` (`.cancelled` when the task was cancelled first).
    public func status() async -> ServiceStatus {
        (try? await Offload.run(orCancelled: .cancelled) { () throws(KeyringError) in self.status() })
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
        try await Offload.run(orCancelled: .cancelled) { () throws(KeyringError) in try self.object(forKey: key) }
    }

    /// Async `setObject(_:forKey:)`: the same write, `.valueData` as `valueContentType` included.
    /// - Parameters:
    ///   - value: the new value.
    ///   - key: which part of the item to write.
    /// - Throws: `KeyringError`; `.cancelled` when the task is cancelled.
    public func setObject(_ value: String, forKey key: Key) async throws(KeyringError) {
        try await Offload.run(orCancelled: .cancelled) { () throws(KeyringError) in try self.setObject(value, forKey: key) }
    }

    /// Async `data(forKey:)`; cancelling the task cancels the call.
    /// - Parameter key: which part of the item to read.
    /// - Returns: the bytes, or nil when there is no item.
    /// - Throws: `KeyringError.locked` rather than nil for a locked item; `.cancelled` on task cancellation.
    public func data(forKey key: Key) async throws(KeyringError) -> Data? {
        try await Offload.run(orCancelled: .cancelled) { () throws(KeyringError) in try self.data(forKey: key) }
    }

    /// Async `setData(_:forKey:)`; cancelling the task cancels the call.
    /// - Parameters:
    ///   - data: the bytes to store.
    ///   - key: which part of the item to write.
    /// - Throws: `KeyringError`; `.cancelled` when the task is cancelled.
    public func setData(_ data: Data, forKey key: Key) async throws(KeyringError) {
        try await Offload.run(orCancelled: .cancelled) { () throws(KeyringError) in try self.setData(data, forKey: key) }
    }

    /// Async `reset()`; cancelling the task cancels the call.
    /// - Throws: `KeyringError.locked` when the item is locked; `.cancelled` when the task is cancelled.
    public func reset() async throws(KeyringError) {
        try await Offload.run(orCancelled: .cancelled) { () throws(KeyringError) in try self.reset() }
    }

    /// Async `storedItem()`: the item this wrapper reads and writes, with its value.
    /// - Returns: the item and its secret bytes, or nil when there is none.
    /// - Throws: `KeyringError.locked` when a matching item is locked; `.cancelled` on task cancellation.
    public func storedItem() async throws(KeyringError) -> (item: KeyringItem, value: Data)? {
        try await Offload.run(orCancelled: .cancelled) { () throws(KeyringError) in try self.storedItem() }
    }

    /// Async `value(_:)`: decodes the JSON-encoded value stored in `.valueData`.
    /// - Parameter type: the type to decode.
    /// - Returns: the value, or nil when there is no item.
    /// - Throws: `KeyringError` (`.cancelled` on task cancellation), or the decoder's error.
    public func value<T: Decodable & Sendable>(_ type: T.Type) async throws -> T? {
        try await Offload.run { try self.value(type) }
    }

    /// Async `setValue(_:)`: stores an `Encodable` value in `.valueData` as JSON.
    /// - Parameter value: the value to store.
    /// - Throws: `KeyringError` (`.cancelled` on task cancellation), or the encoder's error.
    public func setValue<T: Encodable & Sendable>(_ value: T) async throws {
        try await Offload.run { try self.setValue(value) }
    }
}
