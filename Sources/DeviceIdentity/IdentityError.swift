import Keyring

/// Why an identifier could not be resolved, reset or migrated.
///
/// No case ever carries the identifier itself, so errors are safe to log.
public enum IdentityError: Error, Sendable, Equatable {
    /// The keyring could not answer and no other store could stand in for it.
    case keyring(KeyringError)
    /// A Secret Service served this user's identifiers before, and none can be reached now (no
    /// bus, or nothing owns `org.freedesktop.secrets` yet: a login race, KeePassXC not started).
    /// That is a temporary failure, not absence, so nothing new was made.
    case keyringUnreachable(KeyringError)
    /// The keyring holds no identifier and the backup file was corrupt, so the identifier may be
    /// lost. Nothing new is made until the user resets (which starts over) or restores the backup.
    case backupCorrupt(path: String, reason: String)
    /// The backup file exists but could not be read; it is not treated as absent.
    case backupUnreadable(path: String, reason: String)
    /// The backup file could not be written where it was the only store.
    case backupUnwritable(path: String, reason: String)
    /// The first-run lock could not be created in any candidate directory.
    case lockUnavailable(reason: String)
    /// Another process held the first-run lock for longer than the timeout.
    case lockTimedOut(seconds: Double)
    /// The generation policy cannot produce an identifier on this machine.
    case policyUnavailable(policy: String, reason: String)
    /// A migration source could not be read, so absence is not proven.
    case migrationSourceUnreadable(source: String, reason: String)
    /// A value written to a store did not read back the same.
    case verificationFailed(store: String)
    /// An argument was rejected; the text says which and why.
    case invalidArgument(String)
}

extension IdentityError: CustomStringConvertible {
    /// One line: what failed and what to do next.
    public var description: String {
        switch self {
        case .keyring(let error):
            return error.description
        case .keyringUnreachable(let error):
            return
                "the keyring that holds this user's identifiers cannot be reached now (\(error)); nothing new was made: start or unlock the keyring (log in to the desktop session), then retry"
        case .backupCorrupt(let path, let reason):
            return
                "the keyring holds no identifier and the backup file \(path) was corrupt (\(reason)), so the identifier may be lost: restore the backup, or run reset to start over with a new identifier"
        case .backupUnreadable(let path, let reason):
            return "the backup file \(path) cannot be read (\(reason)): fix its permissions or move it aside, then retry"
        case .backupUnwritable(let path, let reason):
            return "the backup file \(path) cannot be written (\(reason)): make its directory writable, or free disk space"
        case .lockUnavailable(let reason):
            return "no place for the first-run lock (\(reason)): set XDG_RUNTIME_DIR to a writable 0700 directory"
        case .lockTimedOut(let seconds):
            return "another process held the first-run lock for over \(seconds) s: retry, or look for a hung process"
        case .policyUnavailable(let policy, let reason):
            return "the \(policy) policy is unavailable: \(reason)"
        case .migrationSourceUnreadable(let source, let reason):
            return "the migration source \(source) cannot be read (\(reason)): fix it or remove it from the sources, then retry"
        case .verificationFailed(let store):
            return "the identifier written to the \(store) did not read back the same: check the \(store), then retry"
        case .invalidArgument(let why):
            return "invalid argument: \(why)"
        }
    }
}
