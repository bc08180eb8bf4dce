import Keyring

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// One public call's time budget: every keyring call gets the time left, lock waits end at the
/// same deadline (Keyring's `CallDeadline`, whose arithmetic saturates), and a keyring that timed
/// out once is not asked again in the same call.
final class Budget {
    let deadline: CallDeadline
    /// The caller's whole timeout, what every timeout of this call reports.
    var seconds: Double { deadline.reportedSeconds }
    private let keyring: Keyring?
    private var failure: KeyringError?
    /// Set when an async caller's task can cancel this call (keyring calls follow it on their own).
    let cancellation = OperationCancellation.active

    init(timeout: Duration, keyring: Keyring?) {
        self.deadline = CallDeadline(timeout: timeout)
        self.keyring = keyring
    }

    var isCancelled: Bool { cancellation?.isCancelled ?? false }

    /// Whether the resolver has a keyring to call.
    var hasKeyring: Bool { keyring != nil }

    /// The keyring with the time left as its timeout; nil without a keyring or time.
    private var currentKeyring: Keyring? {
        guard var keyring else { return nil }
        keyring.timeout = max(deadline.remaining, .milliseconds(1))
        return keyring
    }

    /// Runs one keyring call with the time left. Timeouts and cancellation are remembered, so
    /// later calls fail at once instead of waiting again.
    /// - Parameter mayPrompt: false to never show an unlock dialog, whatever the keyring's policy.
    func call<T>(mayPrompt: Bool = true, _ body: (Keyring) throws(KeyringError) -> T) throws(KeyringError) -> T {
        if let failure { throw failure }
        if isCancelled { throw remember(.cancelled) }
        guard var keyring = currentKeyring else { throw .noSecretService }
        if !mayPrompt { keyring.unlock = .never }
        if deadline.hasPassed { throw remember(deadline.timedOut) }
        do throws(KeyringError) {
            return try body(keyring)
        } catch .timedOut {
            throw remember(deadline.timedOut)
        } catch .cancelled {
            throw remember(.cancelled)
        }
    }

    private func remember(_ error: KeyringError) -> KeyringError {
        failure = error
        return error
    }
}
