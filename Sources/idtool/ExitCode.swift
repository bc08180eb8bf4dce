import Keyring

/// idtool's exit statuses, from sysexits(3).
enum ExitCode: Int32, Sendable, CaseIterable {
    /// Success.
    case ok = 0
    /// `item get`: no such item (or the item lacks the requested key).
    case absent = 1
    /// EX_USAGE: the command line is wrong.
    case usage = 64
    /// EX_DATAERR: the input data is wrong (a bad app key, a value that is too large), an item
    /// command without --account meets several accounts' items, or the file keyring does not
    /// open with its key or is damaged.
    case dataError = 65
    /// EX_UNAVAILABLE: no session bus, no Secret Service, or no default collection; a Secret
    /// Service that cannot open an encrypted session (KWallet without its QCA plugin); or the
    /// file keyring cannot be read or written.
    case unavailable = 69
    /// EX_SOFTWARE: an internal error, or a failure the Secret Service did not explain.
    case software = 70
    /// EX_TEMPFAIL: the keyring is locked or did not answer in time; retry later.
    case temporaryFailure = 75

    /// The exit status that fits a keyring failure.
    init(_ error: KeyringError) {
        switch error {
        case .noSessionBus, .noSecretService, .noDefaultCollection: self = .unavailable
        case .locked, .timedOut, .cancelled: self = .temporaryFailure
        case .invalidArgument, .valueIsNotText, .ambiguousItem: self = .dataError
        case .serviceFailure: self = .software
        case .wrongKey, .keyringFileDamaged, .valueLost: self = .dataError
        case .keyringFileUnavailable, .keyExchangeFailed, .unsupported: self = .unavailable
        }
    }
}
