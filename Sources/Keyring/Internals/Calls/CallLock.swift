#if canImport(Glibc)
import Glibc
#endif

/// An in-process lock that a call waits on only until its deadline, and no longer once it is
/// cancelled: the service gate, the prompt gate and the in-process creation lock. Re-entrant for
/// the thread that holds it.
///
/// A pthread mutex and condition variable (on the monotonic clock, as `ContinuousClock`): a
/// release wakes a waiter at once, and a waiter wakes at least every 20 ms to see a cancellation.
final class CallLock: @unchecked Sendable {
    // Sound as Sendable: the mutex and condition are allocated once, never moved or freed (every
    // lock is a static), and `owner`/`depth` are only read or written with `mutex` held.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var owner: pthread_t?
    private var depth = 0

    init() {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    /// Runs `body` holding the lock, waiting for it until `deadline`.
    /// - Throws: `deadline.timedOut`, `.cancelled` when `cancellation` (or this thread's
    ///   `OperationCancellation` token) is cancelled while waiting, or what `body` throws.
    func with<T>(
        _ deadline: CallDeadline, cancellation: Cancellation?, _ body: () throws(KeyringError) -> T
    ) throws(KeyringError) -> T {
        try acquire(deadline, cancellation: cancellation, depth: 1)
        defer { release() }
        return try body()
    }

    /// Runs `body` without the lock, which this thread holds (at every depth), and takes it back
    /// afterwards, waiting until `deadline`: for a wait that must not stall other threads (an
    /// unlock prompt), inside `with`.
    /// - Throws: what `body` throws; else `deadline.timedOut` or `.cancelled` when the lock is not
    ///   back in time (the call is over then, its result dropped).
    func without<T>(
        _ deadline: CallDeadline, cancellation: Cancellation?, _ body: () throws(KeyringError) -> T
    ) throws(KeyringError) -> T {
        let held = releaseAll()
        if held == 0 { return try body() }  // not held by this thread: nothing to give up
        let result = Result { () throws(KeyringError) -> T in try body() }
        // Not taken back in time: the enclosing `with`s find another owner (or none) and release
        // nothing. A failure of `body` is the call's outcome either way.
        do throws(KeyringError) {
            try acquire(deadline, cancellation: cancellation, depth: held)
        } catch {
            _ = try result.get()
            throw error
        }
        return try result.get()
    }

    private func acquire(_ deadline: CallDeadline, cancellation: Cancellation?, depth levels: Int) throws(KeyringError) {
        let me = pthread_self()
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while let holder = owner, pthread_equal(holder, me) == 0 {
            if Deadline.isCancelled(cancellation) { throw .cancelled }
            if deadline.hasPassed { throw deadline.timedOut }
            var until = timespec()
            clock_gettime(CLOCK_MONOTONIC, &until)
            let slice = min(deadline.remaining, .milliseconds(20)).components
            let nanoseconds = Int(until.tv_nsec) + Int(slice.attoseconds / 1_000_000_000)
            until.tv_sec += Int(slice.seconds) + nanoseconds / 1_000_000_000
            until.tv_nsec = nanoseconds % 1_000_000_000
            pthread_cond_timedwait(condition, mutex, &until)
        }
        owner = me
        depth += levels
    }

    private func release() {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        guard let holder = owner, pthread_equal(holder, pthread_self()) != 0 else { return }  // see `without`
        depth -= 1
        if depth == 0 {
            owner = nil
            pthread_cond_signal(condition)
        }
    }

    /// Releases every level this thread holds; returns how many.
    private func releaseAll() -> Int {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        guard let holder = owner, pthread_equal(holder, pthread_self()) != 0 else { return 0 }
        let held = depth
        depth = 0
        owner = nil
        pthread_cond_signal(condition)
        return held
    }
}
