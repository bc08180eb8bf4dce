/// Whether a keyring call may ask the user to unlock a locked keyring.
///
/// On a desktop with automatic login the login keyring starts locked. With `.prompt` a read,
/// write or delete that meets it asks the Secret Service to unlock it, as libsecret,
/// `secret-tool` and python-keyring do: the desktop shows its unlock dialog, and the call goes
/// on once the user has typed the password. The wait counts against the call's timeout.
public enum UnlockPolicy: Sendable, Equatable, Hashable {
    /// Ask the Secret Service to unlock, which may show the desktop's unlock dialog (the default).
    case prompt
    /// Never ask: a locked keyring fails at once with `KeyringError.locked`. For scripts, cron
    /// jobs and services, where nobody could answer a dialog.
    case never
}

/// What became of the unlock request behind a `KeyringError.locked`.
public enum UnlockOutcome: Sendable, Equatable, Hashable {
    /// No unlock was asked for (the policy is `.never`, or the service offered no prompt).
    case notAsked
    /// The unlock dialog was dismissed: the user cancelled it, or no dialog could be shown
    /// (no display, no prompter).
    case dismissed
    /// Nobody answered the unlock dialog before the call's timeout; it was closed.
    case unanswered
}
