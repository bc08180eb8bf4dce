/// One change of the items a `KeyringChanges` sequence watches, made by any process.
public struct KeyringChange: Sendable, Hashable {
    /// What happened.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// A matching item appeared (created, or changed so that it now matches).
        case created
        /// A matching item's secret, label or attributes changed.
        case changed
        /// A matching item went away (deleted, or changed so that it no longer matches).
        case deleted
        /// The collection that holds the items (or the default one) was locked.
        case locked
        /// That collection was unlocked.
        case unlocked
        /// The Secret Service left the session bus (the daemon stopped or crashed).
        case serviceStopped = "service-stopped"
        /// A Secret Service took the name again; the items are compared with what was seen before.
        case serviceStarted = "service-started"
    }

    /// What happened.
    public let kind: Kind
    /// For `created` and `changed` the item as it is now; for `deleted` as it was last seen
    /// (its attributes can no longer be read). Nil for the other kinds.
    public let item: KeyringItem?
    /// For `locked` and `unlocked`, the collection's object path; nil otherwise.
    public let collection: String?

    /// Creates a change value, e.g. to test code that handles changes.
    /// - Parameters:
    ///   - kind: what happened.
    ///   - item: the item, for item changes.
    ///   - collection: the collection's object path, for lock changes.
    public init(_ kind: Kind, item: KeyringItem? = nil, collection: String? = nil) {
        self.kind = kind
        self.item = item
        self.collection = collection
    }
}

/// The changes of one item, or of every item of an identifier or access group, as they happen:
/// from `SecretStore.changes()` and `Keyring.changes(identifier:accessGroup:)`.
///
/// It never ends on its own (the service going away is a change, `serviceStopped`); cancelling the
/// task that iterates it, or letting go of both the sequence and its iterator, ends the
/// subscription and frees what it holds.
/// While the consumer is busy the newest `bufferLimit` changes are kept and older ones dropped.
/// Iterate it once: a second iterator shares the first one's changes.
public struct KeyringChanges: AsyncSequence, Sendable {
    /// Each element is one change.
    public typealias Element = KeyringChange

    /// How many changes are kept for a consumer that has not asked for them yet.
    public static let bufferLimit = 256

    let stream: AsyncStream<KeyringChange>
    let lifetime: Lifetime

    /// Ends the subscription when the last copy of the sequence or an iterator goes.
    final class Lifetime: Sendable {
        let end: @Sendable () -> Void
        init(end: @escaping @Sendable () -> Void) { self.end = end }
        deinit { end() }
    }

    /// Iterates the changes.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncStream<KeyringChange>.AsyncIterator
        let lifetime: Lifetime

        /// The next change; nil only once the task is cancelled.
        /// - Returns: the change, or nil when iteration ended.
        public mutating func next() async -> KeyringChange? { await base.next() }
    }

    /// Starts iterating.
    /// - Returns: the iterator.
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: stream.makeAsyncIterator(), lifetime: lifetime) }
}
