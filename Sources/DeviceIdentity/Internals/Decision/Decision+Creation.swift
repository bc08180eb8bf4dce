import Keyring

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The second half of the decision: what a first run does with the result of its keyring write.
/// Like a read, every outcome of a creation attempt (inserted, another value found, locked or
/// dismissed in between, timed out waiting for another creator, cancelled) comes here, so a
/// failed write is never mistaken for a keyring that is not there.
extension Decision {
    /// What a create-if-absent write came to, after searching again for "the" item.
    enum WriteOutcome: Equatable {
        /// The keyring was not written: the decision said the backup alone holds the new value.
        case notAttempted
        /// "The" item holds the value written, first made at `created` (as its attributes say).
        case stored(created: Date?)
        /// "The" item holds another valid value: another process, whatever its environment, stored it first.
        case found(String, item: KeyringItem)
        /// "The" item holds a value a pending reset voids, and the reset cannot complete yet.
        case foundVoid
        /// "The" item holds a value that breaks the identifier rules.
        case foundInvalid(reason: String)
        /// The write failed: locked or dismissed between the read and the write, timed out
        /// waiting for another creator's lock, cancelled, no default collection, and so on.
        case failed(KeyringError)
    }

    /// Where a created identifier ends up.
    enum AfterCreate: Equatable {
        /// The keyring holds `value` (the one made, or another process's when `adopted`); the
        /// backup mirrors it.
        case keyring(value: String, adopted: Bool)
        /// Only the backup holds the new value for now, for the reason in `problem`; it is
        /// pushed into the keyring once that can hold it.
        case backupOnly(problem: KeyringError?)
        /// Nothing is handed out: the error says why.
        case fail(IdentityError)
    }

    /// The rule for a first run's write. Only a proven absence of a keyring (the creation said
    /// so before writing), a missing default collection, and a pending reset that cannot
    /// complete yet (the keyring holds only the value it voids) let the backup alone hold a new
    /// identifier. Anything else either adopts what the keyring holds or fails, so that waiting
    /// on another process's creation never makes an identifier of its own.
    static func decideAfterCreate(_ outcome: WriteOutcome, value: String, creation: Creation, hasBackup: Bool, scope: IdentifierScope)
        -> AfterCreate
    {
        let problem: KeyringError?
        switch outcome {
        case .stored:
            return .keyring(value: value, adopted: false)
        case .found(let other, _):
            return .keyring(value: other, adopted: true)
        case .foundInvalid(let reason):
            let message = "the keyring item for \(scope) holds an invalid identifier (\(reason)); run reset to start over"
            return .fail(.keyring(.invalidArgument(message)))
        case .notAttempted:
            problem = creation.keyringProblem
        case .foundVoid:
            problem = .serviceFailure(
                domain: "keyring-identity", code: 2,
                message: "the keyring still holds an identifier that a pending reset removes, and the reset cannot complete yet")
        case .failed(.noDefaultCollection):
            problem = .noDefaultCollection
        case .failed(let error):
            switch error {
            // It answered "absent" a moment ago: gone now is a temporary failure, not headless.
            case .noSecretService, .noSessionBus: return .fail(.keyringUnreachable(error))
            default: return .fail(.keyring(error))
            }
        }
        // Without a backup file there is nowhere to keep it.
        return hasBackup ? .backupOnly(problem: problem) : .fail(.keyring(problem ?? .noSecretService))
    }
}
