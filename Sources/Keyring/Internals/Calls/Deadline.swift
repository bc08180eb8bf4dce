internal import CLibSecret
import Dispatch
import Synchronization

/// Cancels the GCancellable in `data` when the one it is connected to is cancelled.
private let cancelLinked: GCallback = unsafeBitCast(
    { (_: UnsafeMutablePointer<GCancellable>?, data: gpointer?) in
        g_cancellable_cancel(data?.assumingMemoryBound(to: GCancellable.self))
    } as @convention(c) (UnsafeMutablePointer<GCancellable>?, gpointer?) -> Void, to: GCallback.self)

/// The scaffolding every keyring operation shares: one GCancellable that a timer cancels at the
/// deadline, linked to the caller's `OperationCancellation`, and a timeout reported as such.
enum Deadline {
    /// Seconds in `duration`, for `KeyringError.timedOut`.
    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// Runs `body` with a cancellable that is cancelled at `deadline`, by `cancellation`, or
    /// (without one) by the enclosing `OperationCancellation.run` token. A cancellation caused
    /// by the deadline, and any `.timedOut`, is thrown as `.timedOut(seconds: seconds)`: the
    /// caller's whole timeout, not what was left of it.
    static func run<T>(
        until deadline: ContinuousClock.Instant, reportingSeconds seconds: Double, cancellation: Cancellation? = nil,
        _ body: (Cancellation) throws(KeyringError) -> T
    ) throws(KeyringError) -> T {
        let left = ContinuousClock.now.duration(to: deadline)
        if left <= .zero { throw .timedOut(seconds: seconds) }
        // A caller's own cancellation, else one for this call alone, linked to the token of an
        // enclosing OperationCancellation.run (cancelling that token cancels this call; this
        // call's timeout does not cancel the token).
        let shared = cancellation == nil ? OperationCancellation.current : nil
        let cancellation = cancellation ?? Cancellation()
        let link = shared.map { g_cancellable_connect($0.pointer, cancelLinked, cancellation.pointer, nil) } ?? 0
        defer { if let shared, link != 0 { g_cancellable_disconnect(shared.pointer, link) } }
        let timedOut = Atomic<Bool>(false)
        return try withExtendedLifetime((cancellation, shared)) { () throws(KeyringError) -> T in
            let timer = DispatchWorkItem { [cancellation] in
                timedOut.store(true, ordering: .sequentiallyConsistent)
                cancellation.cancel()
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + Self.seconds(left), execute: timer)
            defer { timer.cancel() }
            do throws(KeyringError) {
                return try body(cancellation)
            } catch .cancelled where timedOut.load(ordering: .sequentiallyConsistent) {
                throw .timedOut(seconds: seconds)
            } catch .timedOut {
                throw .timedOut(seconds: seconds)
            }
        }
    }
}
