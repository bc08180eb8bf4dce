import Testing

@testable import Keyring

#if canImport(Glibc)
import Glibc
#endif

/// `Deadline.run` reports a cancellation at or after its deadline as the caller's timeout, whoever
/// cancelled. A call nested in another shares its cancellable, and both deadlines fall at one
/// instant: when the inner alarm fired first and the outer one had not yet run, the outer call
/// threw `.cancelled` (CI, under load: a 1 s creation lock on a stopped bus said "cancelled").
@Suite("Deadline.run")
struct DeadlineRunTests {
    @Test("a cancellation after the deadline, before this call's own alarm, is its timeout")
    func cancellationAfterTheDeadlineIsATimeout() {
        for _ in 0..<20 {
            let deadline = CallDeadline(timeout: .milliseconds(20))
            let shared = Cancellation()
            let error: KeyringError? = {
                do throws(KeyringError) {
                    try Deadline.run(until: deadline, cancellation: shared) { _ throws(KeyringError) in
                        while !deadline.hasPassed { usleep(500) }
                        // What a nested call's alarm does to the shared cancellable, just before this one's.
                        shared.cancel()
                        throw .cancelled
                    }
                    return nil
                } catch {
                    return error
                }
            }()
            #expect(error == .timedOut(seconds: 0.02))
        }
    }

    @Test("a cancellation before the deadline stays a cancellation")
    func cancellationBeforeTheDeadline() {
        let deadline = CallDeadline(timeout: .seconds(600))
        let shared = Cancellation()
        let error: KeyringError? = {
            do throws(KeyringError) {
                try Deadline.run(until: deadline, cancellation: shared) { _ throws(KeyringError) in
                    shared.cancel()
                    throw .cancelled
                }
                return nil
            } catch {
                return error
            }
        }()
        #expect(error == .cancelled)
    }
}
