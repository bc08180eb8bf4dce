internal import CLibSecret
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// One public call's deadline, shared by every wait of that call: the in-process locks, the bus
/// and file locks, each round trip and an unlock prompt. Made once, when the call starts, and
/// handed down, so a call that waits on a lock and then talks to the service still ends within
/// its one timeout.
///
/// Arithmetic saturates: a timeout beyond `longest` (`.seconds(Int64.max)`, say) waits a century,
/// never traps. A `.timedOut` always reports the caller's whole timeout, not what was left of it.
package struct CallDeadline: Sendable {
    /// When the call must end.
    package let instant: ContinuousClock.Instant
    /// The caller's whole timeout in seconds: what `KeyringError.timedOut` reports.
    package let reportedSeconds: Double

    /// The longest wait a deadline allows: a century, beyond any real call, and small enough that
    /// the clock's and GLib's arithmetic on it never overflows.
    package static let longest: Duration = .seconds(3_155_760_000)

    /// A deadline `timeout` from `start` (now by default).
    /// - Parameters:
    ///   - timeout: the caller's timeout; zero or negative has passed at once, a huge one saturates.
    ///   - start: when the call started.
    package init(timeout: Duration, from start: ContinuousClock.Instant = .now) {
        reportedSeconds = timeout / .seconds(1)  // Double division: no overflow for any Duration
        instant = start + min(max(timeout, .zero), Self.longest)
    }

    /// The time left, never negative.
    package var remaining: Duration { max(.zero, ContinuousClock.now.duration(to: instant)) }

    /// True once the deadline passed.
    package var hasPassed: Bool { ContinuousClock.now >= instant }

    /// Milliseconds left, for GDBus timeouts: at least 1 (0 or -1 mean GDBus's default there),
    /// at most `Int32.max` (24 days; a longer call is bounded by the deadline's timer instead).
    package var remainingMilliseconds: Int32 {
        let left = remaining.components  // at most `longest`: no overflow below
        return Int32(clamping: max(1, left.seconds * 1000 + left.attoseconds / 1_000_000_000_000_000))
    }

    /// The error a call that ran out of time throws.
    package var timedOut: KeyringError { .timedOut(seconds: reportedSeconds) }

    /// Sleeps for `pause`, or until the deadline when that comes first.
    package func sleep(upTo pause: Duration) {
        let left = min(pause, remaining).components
        let microseconds = left.seconds * 1_000_000 + left.attoseconds / 1_000_000_000_000
        if microseconds > 0 { usleep(UInt32(clamping: microseconds)) }
    }

    /// How a `poll` ended.
    package enum PollOutcome {
        case done, timedOut, cancelled
    }

    /// Calls `attempt` until it returns true, pausing between tries (1 ms, doubling up to 20 ms)
    /// and never past the deadline: the one retry loop of every nonblocking lock (flock, the bus
    /// name).
    /// - Parameters:
    ///   - isCancelled: checked between tries.
    ///   - attempt: one try; true when done.
    /// - Returns: `.done`, or `.timedOut`/`.cancelled` when the deadline passed or `isCancelled` said so first.
    /// - Throws: what `attempt` throws.
    package func poll<E: Error>(isCancelled: () -> Bool, _ attempt: () throws(E) -> Bool) throws(E) -> PollOutcome {
        var pause: Duration = .milliseconds(1)
        while try !attempt() {
            // The deadline first: its alarm cancels too.
            if hasPassed { return .timedOut }
            if isCancelled() { return .cancelled }
            sleep(upTo: pause)
            pause = min(pause * 2, .milliseconds(20))
        }
        return .done
    }
}

/// Cancels the GCancellable in `data` when the one it is connected to is cancelled.
private let cancelLinked: GCallback = unsafeBitCast(
    { (_: UnsafeMutablePointer<GCancellable>?, data: gpointer?) in
        g_cancellable_cancel(data?.assumingMemoryBound(to: GCancellable.self))
    } as @convention(c) (UnsafeMutablePointer<GCancellable>?, gpointer?) -> Void, to: GCallback.self)

/// The scaffolding every keyring operation shares: one GCancellable that a timer cancels at the
/// deadline, linked to the caller's `OperationCancellation`, and a timeout reported as such.
enum Deadline {
    /// Whether a call with `cancellation` (or, without one, this thread's `OperationCancellation`
    /// token) was cancelled: for the waits a call makes before `run` gives it its cancellable.
    static func isCancelled(_ cancellation: Cancellation?) -> Bool {
        (cancellation ?? OperationCancellation.current)?.isCancelled ?? false
    }

    /// Runs `body` with a cancellable that is cancelled at `deadline`, by `cancellation`, or
    /// (without one) by the enclosing `OperationCancellation.run` token. A cancellation caused
    /// by the deadline, and any `.timedOut`, is thrown as `deadline.timedOut`: the caller's
    /// whole timeout, not what was left of it.
    static func run<T>(
        until deadline: CallDeadline, cancellation: Cancellation? = nil, _ body: (Cancellation) throws(KeyringError) -> T
    ) throws(KeyringError) -> T {
        if deadline.hasPassed { throw deadline.timedOut }
        // A caller's own cancellation, else one for this call alone, linked to the token of an
        // enclosing OperationCancellation.run (cancelling that token cancels this call; this
        // call's timeout does not cancel the token).
        let shared = cancellation == nil ? OperationCancellation.current : nil
        let cancellation = cancellation ?? Cancellation()
        let link = shared.map { g_cancellable_connect($0.pointer, cancelLinked, cancellation.pointer, nil) } ?? 0
        return try withExtendedLifetime((cancellation, shared)) { () throws(KeyringError) -> T in
            // Inside the extended lifetime: the shared token's handler must be gone before `cancellation` may be freed.
            defer { if let shared, link != 0 { g_cancellable_disconnect(shared.pointer, link) } }
            // The alarm fires only once the deadline has passed, so `hasPassed` tells its cancellation.
            let alarm = DeadlineAlarms.shared.add(at: deadline.instant) { [cancellation] in cancellation.cancel() }
            defer { DeadlineAlarms.shared.remove(alarm) }
            do throws(KeyringError) {
                return try body(cancellation)
            } catch .cancelled where deadline.hasPassed {
                // Past the deadline a cancellation is its timeout, whoever cancelled: a nested call
                // sharing this cancellable has its own alarm at the same instant, which may fire first.
                throw deadline.timedOut
            } catch .timedOut {
                throw deadline.timedOut
            }
        }
    }
}

/// One timer for the deadlines of every call in flight, armed for the earliest.
///
/// Not a timer per call: a cancelled `asyncAfter` work item stays queued, with the cancellable it
/// holds, until its deadline (about 1 KiB held for the whole timeout, per call), and libdispatch
/// keeps a cancelled timer source's handler in per-thread caches; either way the heap of a busy
/// app grew with its call rate. Here a call adds an entry and removes it, and the one timer is
/// re-armed only when a deadline earlier than the armed one arrives, or when it fires.
final class DeadlineAlarms: @unchecked Sendable {
    // Sound as Sendable: `entries` is a lock, and `timer` is only rescheduled with it held (a
    // dispatch source may be rescheduled from any thread).
    static let shared = DeadlineAlarms()

    private struct Entries {
        var due: [UInt64: (at: ContinuousClock.Instant, fire: @Sendable () -> Void)] = [:]
        var next: UInt64 = 0
        /// When the timer is set to fire; nil when it is idle.
        var armedFor: ContinuousClock.Instant?
    }

    private let entries = Guarded(Entries())
    private let timer: any DispatchSourceTimer

    private init() {
        timer = DispatchSource.makeTimerSource(queue: .global())
        timer.setEventHandler { DeadlineAlarms.shared.fireDue() }
        timer.activate()
    }

    /// Calls `fire` (on a dispatch queue) at `instant`, unless `remove` comes first. Returns the entry's key.
    func add(at instant: ContinuousClock.Instant, _ fire: @escaping @Sendable () -> Void) -> UInt64 {
        entries.withLock { entries in
            entries.next &+= 1
            entries.due[entries.next] = (instant, fire)
            if entries.armedFor.map({ instant < $0 }) ?? true { arm(for: instant, &entries) }
            return entries.next
        }
    }

    /// Forgets the entry `key`. The timer stays armed: firing with nothing due only re-arms it.
    func remove(_ key: UInt64) {
        _ = entries.withLock { $0.due.removeValue(forKey: key) }
    }

    private func fireDue() {
        let now = ContinuousClock.now
        let due = entries.withLock { entries -> [@Sendable () -> Void] in
            let expired = entries.due.filter { $0.value.at <= now }
            for key in expired.keys { entries.due.removeValue(forKey: key) }
            entries.armedFor = nil
            if let earliest = entries.due.values.map(\.at).min() { arm(for: earliest, &entries) }
            return expired.values.map(\.fire)
        }
        for fire in due { fire() }
    }

    private func arm(for instant: ContinuousClock.Instant, _ entries: inout Entries) {
        let left = max(.zero, ContinuousClock.now.duration(to: instant)).components  // at most CallDeadline.longest
        timer.schedule(deadline: .now() + .nanoseconds(Int(left.seconds) * 1_000_000_000 + Int(left.attoseconds / 1_000_000_000)))
        entries.armedFor = instant
    }
}
