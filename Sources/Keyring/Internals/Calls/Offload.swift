import Dispatch

/// Runs blocking libsecret work on a private queue, never on Swift's cooperative pool, and turns
/// task cancellation into GCancellable cancellation.
enum Offload {
    private static let queue = DispatchQueue(label: "KeyringIdentity.blocking", attributes: .concurrent)

    static func run<T: Sendable>(
        _ work: @escaping @Sendable (Cancellation) throws(KeyringError) -> T
    ) async throws(KeyringError) -> T {
        let cancellation = Cancellation()
        let result: Result<T, KeyringError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                queue.async {
                    if cancellation.isCancelled { return continuation.resume(returning: .failure(.cancelled)) }
                    continuation.resume(returning: Result { () throws(KeyringError) -> T in try work(cancellation) })
                }
            }
        } onCancel: {
            cancellation.cancel()
        }
        return try result.get()
    }
}
