import Dispatch

/// What a watch reports on: the items a search for `attributes` finds that `owns` accepts (for a
/// wrapper, exactly the items `SecretStore` reads and writes).
package struct ChangeScope: Sendable {
    let attributes: [String: String]
    let owns: @Sendable (KeyringItem) -> Bool

    func matches(_ item: KeyringItem) -> Bool {
        attributes.allSatisfy { item.attributes[$0.key] == $0.value } && owns(item)
    }
}

/// The one change watch, over any store's `ChangeSource`: each trigger leads to a look, and
/// `ChangeRule` turns the last snapshot and the new one into the changes reported.
///
/// The source's subscription only hands triggers over; the looks run on this watch's own serial
/// queue. At most `waitingLimit` triggers wait: past that, those a full look may stand for are
/// dropped for one. So nothing queues without bound, and a slow consumer holds at most
/// `KeyringChanges.bufferLimit` changes.
final class ChangeWatch<Source: ChangeSource>: @unchecked Sendable {
    // Sound as Sendable: `waiting` is `Guarded`; `last` is touched only on `queue` (and by `start`
    // inside `queue.sync`, before any look can run).
    private struct Waiting {
        var triggers: [Source.Trigger] = []
        var overflowed = false
        var scheduled = false
        var stopped = false
    }

    static var waitingLimit: Int { 64 }

    private let source: Source
    private let continuation: AsyncStream<KeyringChange>.Continuation
    private let queue = DispatchQueue(label: "KeyringIdentity.changes")
    private let waiting = Guarded(Waiting())
    private var last = ChangeSnapshot()

    private init(_ source: Source, _ continuation: AsyncStream<KeyringChange>.Continuation) {
        self.source = source
        self.continuation = continuation
    }

    /// Subscribes and takes the first look (its errors are thrown here); returns what stops the watch.
    static func start(_ source: Source, _ continuation: AsyncStream<KeyringChange>.Continuation) throws(KeyringError)
        -> @Sendable () -> Void
    {
        let watch = ChangeWatch(source, continuation)
        // Both on the queue: a trigger that comes between them is looked at after the first look.
        let started = watch.queue.sync {
            Result { () throws(KeyringError) -> @Sendable () -> Void in
                let cancel = try source.subscribe { [weak watch] trigger in watch?.receive(trigger) }
                let stop: @Sendable () -> Void = {
                    watch.waiting.withLock {
                        $0.stopped = true
                        $0.triggers.removeAll()
                    }
                    cancel()
                }
                do throws(KeyringError) {
                    watch.last = try source.firstLook()
                } catch {
                    stop()
                    throw error
                }
                return stop
            }
        }
        return try started.get()
    }

    /// On the subscription's thread: copy, never look.
    private func receive(_ trigger: Source.Trigger) {
        let schedule = waiting.withLock { waiting -> Bool in
            if waiting.stopped || trigger.repeats(in: waiting.triggers) { return false }
            if waiting.triggers.count >= Self.waitingLimit {
                waiting.overflowed = true
                waiting.triggers.removeAll(where: \.mayDrop)
                if waiting.triggers.count >= Self.waitingLimit { waiting.triggers.removeFirst() }
            }
            waiting.triggers.append(trigger)
            if waiting.scheduled { return false }
            waiting.scheduled = true
            return true
        }
        if schedule { queue.async { self.drain() } }
    }

    private func drain() {
        while true {
            let batch = waiting.withLock { waiting -> [Source.Trigger]? in
                guard !waiting.stopped, !waiting.triggers.isEmpty || waiting.overflowed else {
                    waiting.scheduled = false
                    return nil
                }
                defer {
                    waiting.triggers.removeAll()
                    waiting.overflowed = false
                }
                return waiting.overflowed ? waiting.triggers + [.fullLook] : waiting.triggers
            }
            guard let batch else { return }
            for trigger in batch where !isStopped {
                // A look that fails (the daemon going or gone, a file mid-write) is left to the next trigger.
                guard let seen = try? source.look(after: trigger, from: last) else { continue }
                for snapshot in seen { report(snapshot) }
            }
        }
    }

    private func report(_ snapshot: ChangeSnapshot) {
        let (changes, next) = ChangeRule.apply(from: last, to: snapshot)
        last = next
        for change in changes where !isStopped { continuation.yield(change) }
    }

    private var isStopped: Bool { waiting.withLock { $0.stopped } }
}

extension KeyringChanges {
    /// Starts the one change watch on `keyring`'s store for `scope`; its first
    /// look is made before this returns, so its errors are thrown here. The watch stops exactly
    /// once, whichever comes first of the consumer's task cancelled and the sequence let go.
    static func start(_ scope: ChangeScope, keyring: Keyring) throws(KeyringError) -> KeyringChanges {
        let (stream, continuation) = AsyncStream.makeStream(of: KeyringChange.self, bufferingPolicy: .bufferingNewest(bufferLimit))
        let stop: @Sendable () -> Void
        do throws(KeyringError) {
            stop = try keyring.itemStore.startWatch(scope, keyring.options, continuation)
        } catch {
            continuation.finish()
            throw error
        }
        let once = Once(stop)
        continuation.onTermination = { _ in once.run() }
        return KeyringChanges(
            stream: stream,
            lifetime: Lifetime {
                once.run()
                continuation.finish()
            })
    }

    /// Runs its body the first time only.
    private final class Once: Sendable {
        private let body: Guarded<(@Sendable () -> Void)?>
        init(_ body: @escaping @Sendable () -> Void) { self.body = Guarded(body) }
        func run() {
            body.withLock { body in
                defer { body = nil }
                return body
            }?()
        }
    }
}
