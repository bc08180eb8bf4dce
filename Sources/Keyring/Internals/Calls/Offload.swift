import Dispatch

/// The one way an async twin runs: it calls its sync twin itself, on a private queue (never on
/// Swift's cooperative pool), under an `OperationCancellation` token that task cancellation
/// cancels. So a twin cannot drift from its sync call: there is no second body, only this hop.
/// Every keyring call inside links its GCancellable to the token (see `Deadline.run`), so a
/// cancelled task ends the call in flight and every later one with `KeyringError.cancelled`.
/// Package API: DeviceIdentity's twins use it too.
package enum Offload {
    private static let queue = DispatchQueue(label: "KeyringIdentity.blocking", attributes: .concurrent)

    /// Runs the sync call `work` off the cooperative pool; cancelling the task cancels it.
    /// - Parameters:
    ///   - cancelled: the error for a task cancelled before `work` started.
    ///   - work: the sync call, exactly as a caller of the sync API makes it.
    /// - Returns: what `work` returns.
    /// - Throws: what `work` throws; `cancelled` when the task was cancelled before it started.
    package static func run<T: Sendable, E: Error>(
        orCancelled cancelled: E, _ work: @escaping @Sendable () throws(E) -> T
    ) async throws(E) -> T {
        let token = OperationCancellation()
        let result: Result<T, E> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                queue.async {
                    if token.isCancelled { return continuation.resume(returning: .failure(cancelled)) }
                    continuation.resume(returning: token.run { Result { () throws(E) -> T in try work() } })
                }
            }
        } onCancel: {
            token.cancel()
        }
        return try result.get()
    }

    /// `run(orCancelled:_:)` for a sync call with untyped errors (a JSON coder's, or a `KeyringError`).
    /// - Parameter work: the sync call.
    /// - Returns: what `work` returns.
    /// - Throws: what `work` throws; `KeyringError.cancelled` when the task was cancelled before it started.
    package static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await run(orCancelled: KeyringError.cancelled as any Error) { () throws(any Error) -> T in try work() }
    }
}
