import Dispatch

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Change notifications on a collection that says when it changed (KeyringTesting's memory
/// keyring, through `LocalKeyring.observeChanges`): after each change, the matching items are
/// listed again on the watch's own queue and compared with the last look, and a lock or unlock of
/// the collection is reported as such. Nothing here reads a file or the bus, and `stop` never waits.
///
/// Items are compared by object path, their metadata and a digest of their secret, as the file
/// backend's watch compares them; a locked collection's secrets are not compared.
final class LocalChangeWatch: Sendable {
    private let scope: ChangeScope
    private let look: @Sendable () throws(KeyringError) -> Picture
    private let continuation: AsyncStream<KeyringChange>.Continuation
    private let queue = DispatchQueue(label: "keyring.local-change-watch")
    /// The last look, and whether a look is already queued (changes in a burst need one).
    private let state: Guarded<(last: Picture, queued: Bool, stopped: Bool)>

    /// The collection as a look saw it.
    struct Picture: Sendable {
        var isLocked: Bool
        var items: [String: (item: KeyringItem, secretDigest: String?)]
    }

    /// The collection the memory keyring stands for, in what the watch reports of a lock.
    static let collection = "/org/freedesktop/secrets/collection/memory"

    private init(
        _ scope: ChangeScope, first: Picture, look: @escaping @Sendable () throws(KeyringError) -> Picture,
        _ continuation: AsyncStream<KeyringChange>.Continuation
    ) {
        self.scope = scope
        self.look = look
        self.continuation = continuation
        state = Guarded((first, false, false))
    }

    /// Looks once (its errors are thrown here) and follows the collection's changes; returns what
    /// stops the watch, or nil when `collection` cannot tell when it changed.
    static func start<Collection: LocalKeyring>(
        _ scope: ChangeScope, _ collection: Collection, timeout: Duration, _ continuation: AsyncStream<KeyringChange>.Continuation
    ) throws(KeyringError) -> (@Sendable () -> Void)? {
        let look: @Sendable () throws(KeyringError) -> Picture = { () throws(KeyringError) in
            try collection.run(timeout: timeout, exclusive: false, prompt: nil) { items throws(KeyringError) -> Picture in
                var picture = Picture(isLocked: items.isLocked, items: [:])
                for found in try items.listed(matching: scope.attributes) where scope.owns(found.item) {
                    let digest = items.isLocked ? nil : Digest.sha256Hex(Array(found.secret))
                    picture.items[found.item.objectPath] = (found.item, digest)
                }
                return picture
            }
        }
        let watch = LocalChangeWatch(scope, first: try look(), look: look, continuation)
        guard let cancel = collection.observeChanges({ [weak watch] in watch?.changed() }) else { return nil }
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
        // A look that fails (an injected fault) is made again at the next change.
        guard let now = try? look() else { return }
        let changes = state.withLock { state -> [KeyringChange] in
            guard !state.stopped else { return [] }
            let last = state.last
            state.last = now
            var changes: [KeyringChange] = []
            if now.isLocked != last.isLocked {
                changes.append(KeyringChange(now.isLocked ? .locked : .unlocked, collection: Self.collection))
            }
            changes += ChangeWatch.differences(from: last.items.mapValues(\.item), to: now.items.mapValues(\.item)) { before, after in
                let old = last.items[before.objectPath], new = now.items[after.objectPath]
                let secretChanged = old?.secretDigest != nil && new?.secretDigest != nil && old?.secretDigest != new?.secretDigest
                return before.label != after.label || before.attributes != after.attributes || before.modified != after.modified
                    || secretChanged
            }
            return changes
        }
        for change in changes { continuation.yield(change) }
    }
}
