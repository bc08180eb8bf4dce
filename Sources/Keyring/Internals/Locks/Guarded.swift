#if canImport(Glibc)
import Glibc
#endif

/// A value behind a pthread mutex: the package's one lock for in-process state, shaped like
/// Synchronization's `Mutex` (`init(_:)`, `withLock(_:)`).
///
/// Not `Mutex` itself: on Linux a contended `Mutex` is handed over through a futex, which
/// ThreadSanitizer does not model, so two threads updating one `Mutex` only inside `withLock`
/// draw a race report (`scripts/sanitize` failed on a test doing just that). ThreadSanitizer
/// intercepts pthread mutexes, so its reports on state behind a `Guarded` are real.
package final class Guarded<Value: ~Copyable>: @unchecked Sendable {
    // Sound as Sendable: `value` is only read or written with `mutex` held, and `withLock`
    // takes and returns values as `sending`, as `Mutex` does.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    /// A lock guarding `initialValue`.
    package init(_ initialValue: consuming sending Value) {
        mutex = .allocate(capacity: 1)
        // Error-checking, so that a re-entrant `withLock` stops the program as `Mutex` does,
        // instead of hanging.
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ERRORCHECK))
        pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
        value = initialValue
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value, holding the lock. Not re-entrant, like `Mutex`.
    package func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        precondition(pthread_mutex_lock(mutex) == 0, "recursive call to lock a Guarded value")
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
