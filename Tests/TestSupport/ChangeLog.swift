// A watch's changes as a test reads them: collected on a task of their own, waited for by deadline.
import Keyring

/// What a watch reported, with when each change arrived.
public final class ChangeLog: Sendable {
    /// Each change, with when it arrived.
    package let entries = Guarded<[(change: KeyringChange, at: ContinuousClock.Instant)]>([])
    private let consumer = Guarded<Task<Void, Never>?>(nil)

    /// Consumes `changes` on a task of its own until `stop()`.
    public init(_ changes: KeyringChanges) {
        let task = Task {
            for await change in changes { self.entries.withLock { $0.append((change, .now)) } }
        }
        consumer.withLock { $0 = task }
    }

    /// Stops consuming (the watch ends with its task).
    public func stop() { consumer.withLock { $0?.cancel() } }

    /// The kinds reported so far, in order.
    public var kinds: [KeyringChange.Kind] { entries.withLock { $0.map(\.change.kind) } }
    /// How many changes were reported so far.
    public var count: Int { entries.withLock { $0.count } }

    /// The first change of `kind` from entry `start` on, waiting up to `limit` for it; and how long
    /// after `since` it arrived (negative: before). Polls: no timing is asserted beyond the loose limit.
    public func first(
        _ kind: KeyringChange.Kind, from start: Int, since: ContinuousClock.Instant, within limit: Duration = .seconds(40)
    ) async -> (change: KeyringChange, latency: Duration)? {
        await first(anyOf: [kind], from: start, since: since, within: limit)
    }

    /// The first change of any of `kinds` from entry `start` on, as `first(_:from:since:within:)`.
    public func first(
        anyOf kinds: Set<KeyringChange.Kind>, from start: Int, since: ContinuousClock.Instant, within limit: Duration = .seconds(40)
    ) async -> (change: KeyringChange, latency: Duration)? {
        let end = ContinuousClock.now + limit
        while ContinuousClock.now < end {
            let found = entries.withLock { entries in entries.dropFirst(start).first { kinds.contains($0.change.kind) } }
            if let found { return (found.change, found.at - since) }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }
}
