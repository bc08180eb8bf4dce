import Dispatch

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Change notifications on a collection that says when it changed (KeyringTesting's memory
/// keyring, through `LocalKeyring.observeChanges`): after each change, the matching items are
/// looked at again on the watch's own queue (`LocalKeyring.watchLook`: no prompt, no injected fault
/// met) and compared with the last look, and a lock or unlock of the collection is reported as such.
/// Nothing here reads a file or the bus, and `stop` never waits.
///
/// Two looks are compared by `ChangeRule`, as on every store. A locked collection that hides its items (as KeePassXC does) keeps them in the picture:
/// hidden is not deleted.
final class LocalChangeWatch: Sendable {
    private let look: @Sendable () throws(KeyringError) -> Picture
    private let continuation: AsyncStream<KeyringChange>.Continuation
    private let queue = DispatchQueue(label: "keyring.local-change-watch")
    /// The last look (nil until the first), and whether a look is already queued (changes in a burst need one).
    private let state = Guarded((last: Picture?.none, queued: false, stopped: false))

    /// The collection as a look saw it.
    struct Picture: Sendable {
        var isLocked: Bool
        var hidesLockedItems: Bool
        var items: [String: (item: KeyringItem, secretDigest: String?)]

        /// The look as the change rule takes it: the one collection, and its items.
        var snapshot: ChangeSnapshot {
            ChangeSnapshot(
                items: items.mapValues { ChangeSnapshot.Entry(item: $0.item, secretDigest: $0.secretDigest) },
                collections: [LocalChangeWatch.collection: isLocked])
        }
    }

    /// The collection the memory keyring stands for, in what the watch reports of a lock.
    static let collection = "/org/freedesktop/secrets/collection/memory"

    private init(look: @escaping @Sendable () throws(KeyringError) -> Picture, _ continuation: AsyncStream<KeyringChange>.Continuation) {
        self.look = look
        self.continuation = continuation
    }

    /// Follows the collection's changes and looks once (its errors are thrown here); returns what
    /// stops the watch, or nil when `collection` cannot tell when it changed.
    static func start<Collection: LocalKeyring>(
        _ scope: ChangeScope, _ collection: Collection, timeout: Duration, _ continuation: AsyncStream<KeyringChange>.Continuation
    ) throws(KeyringError) -> (@Sendable () -> Void)? {
        let look: @Sendable () throws(KeyringError) -> Picture = { () throws(KeyringError) in
            let seen = try collection.watchLook(matching: scope.attributes, timeout: timeout)
            var picture = Picture(isLocked: seen.isLocked, hidesLockedItems: seen.hidesLockedItems, items: [:])
            for found in seen.items where scope.owns(found.item) {
                picture.items[found.item.objectPath] = (found.item, seen.isLocked ? nil : Digest.sha256Hex(Array(found.secret)))
            }
            return picture
        }
        let watch = LocalChangeWatch(look: look, continuation)
        // Subscribed before the first look, on the queue: a change made meanwhile is looked at after it.
        let started = watch.queue.sync { () -> Result<(@Sendable () -> Void)?, KeyringError> in
            guard let cancel = collection.observeChanges({ [weak watch] in watch?.changed() }) else { return .success(nil) }
            do throws(KeyringError) {
                let first = try look()
                watch.state.withLock { $0.last = first }
                return .success(cancel)
            } catch {
                cancel()
                return .failure(error)
            }
        }
        guard let cancel = try started.get() else { return nil }
        return {
            cancel()
            watch.state.withLock { $0.stopped = true }
        }
    }

    /// One look for a burst of changes: queued unless one is already waiting.
    private func changed() {
        let queue = state.withLock { state -> Bool in
            guard !state.stopped, !state.queued else { return false }
            state.queued = true
            return true
        }
        guard queue else { return }
        self.queue.async { [self] in lookAgain() }
    }

    private func lookAgain() {
        state.withLock { $0.queued = false }
        // A look that fails is made again at the next change.
        guard var now = try? look() else { return }
        let changes = state.withLock { state -> [KeyringChange] in
            guard !state.stopped, let last = state.last else { return [] }
            if now.isLocked && now.hidesLockedItems { now.items = last.items }
            state.last = now
            return ChangeRule.changes(from: last.snapshot, to: now.snapshot)
        }
        for change in changes { continuation.yield(change) }
    }
}
