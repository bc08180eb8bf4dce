/// What a watch reports on: the items a search for `attributes` finds that `owns` accepts (for a
/// wrapper, exactly the items `SecretStore` reads and writes).
package struct ChangeScope: Sendable {
    let attributes: [String: String]
    let owns: @Sendable (KeyringItem) -> Bool

    func matches(_ item: KeyringItem) -> Bool {
        attributes.allSatisfy { item.attributes[$0.key] == $0.value } && owns(item)
    }
}

/// The one way a watch becomes a `KeyringChanges`: a bounded stream, and the watch's `stop` run
/// exactly once, whichever comes first of the consumer's task cancelled and the sequence let go.
enum ChangeWatch {
    /// Starts the watch for `scope` on the backend `keyring` uses; its first look at the items is
    /// made before this returns, so its errors are thrown here.
    static func start(_ scope: ChangeScope, keyring: Keyring) throws(KeyringError) -> KeyringChanges {
        try make { continuation throws(KeyringError) in
            try keyring.itemStore.startWatch(scope, keyring.options, continuation)
        }
    }

    private static func make(
        _ start: (AsyncStream<KeyringChange>.Continuation) throws(KeyringError) -> @Sendable () -> Void
    ) throws(KeyringError) -> KeyringChanges {
        let (stream, continuation) = AsyncStream.makeStream(
            of: KeyringChange.self, bufferingPolicy: .bufferingNewest(KeyringChanges.bufferLimit))
        let stop: @Sendable () -> Void
        do throws(KeyringError) {
            stop = try start(continuation)
        } catch {
            continuation.finish()
            throw error
        }
        let once = Once(stop)
        continuation.onTermination = { _ in once.run() }
        return KeyringChanges(
            stream: stream,
            lifetime: KeyringChanges.Lifetime {
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
