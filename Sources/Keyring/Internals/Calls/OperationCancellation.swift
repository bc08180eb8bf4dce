#if canImport(Glibc)
import Glibc
#endif

/// Lets a caller that makes several keyring calls in a row (DeviceIdentity's resolver) cancel all
/// of them from another thread, such as a task-cancellation handler: calls made inside
/// `run(_:)` on this thread share its GCancellable. Package API, not public.
package final class OperationCancellation: Sendable {
    let cancellation = Cancellation()

    /// A token that nothing has cancelled yet.
    package init() {}

    /// Cancels the keyring call in flight, and every later one made under this token.
    package func cancel() { cancellation.cancel() }

    /// True once `cancel()` was called.
    package var isCancelled: Bool { cancellation.isCancelled }

    /// Runs `body` with this token as the cancellation of every keyring call it makes on this thread.
    /// - Parameter body: the work.
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws.
    package func run<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        let previous = Self.active
        Self.setActive(self)
        defer { Self.setActive(previous) }
        return try body()
    }

    /// The token whose `run(_:)` this thread is inside, if any.
    package static var active: OperationCancellation? {
        pthread_getspecific(activeKey).map { Unmanaged<OperationCancellation>.fromOpaque($0).takeUnretainedValue() }
    }

    /// The GCancellable keyring calls on this thread link to.
    static var current: Cancellation? { active?.cancellation }

    /// The active token is per thread, so it lives in thread-local storage: no state is shared
    /// between threads. (A process-wide `Mutex`-guarded dictionary did the same, but Swift's
    /// Mutex waits on a futex that ThreadSanitizer cannot see, so two async twins on the
    /// offload queue were reported as a race.) Unretained: `run` keeps `self` and `previous`
    /// alive for as long as either is set.
    private static let activeKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    private static func setActive(_ token: OperationCancellation?) {
        pthread_setspecific(activeKey, token.map { UnsafeRawPointer(Unmanaged.passUnretained($0).toOpaque()) })
    }
}
