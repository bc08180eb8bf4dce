/// Why a keyring operation did not complete.
///
/// Messages say what to do next. They never contain a secret or a stored value.
/// Match cases in a `catch` to tell "locked" from "absent" from "unreachable":
///
/// ```swift
/// do { _ = try store.object(forKey: .valueData) }
/// catch KeyringError.locked { /* the unlock dialog was dismissed (or unlock: .never): retry later */ }
/// ```
public enum KeyringError: Error, Sendable, Equatable {
    /// No D-Bus session bus could be reached (no `DBUS_SESSION_BUS_ADDRESS`, a stale socket, a closed connection).
    case noSessionBus(detail: String)
    /// The session bus has no Secret Service provider (`org.freedesktop.secrets` has no owner and none can be activated).
    case noSecretService
    /// The collection is locked. `itemExists` is true when a matching item was seen but cannot be
    /// read; `unlock` says whether the user was asked to unlock it and what came of that.
    case locked(itemExists: Bool, unlock: UnlockOutcome = .notAsked)
    /// The Secret Service has no default collection to store items in.
    case noDefaultCollection
    /// The operation did not finish within the configured timeout.
    case timedOut(seconds: Double)
    /// The caller cancelled the operation.
    case cancelled
    /// An argument was rejected before anything was sent to the service; the text says which and why.
    case invalidArgument(String)
    /// The stored value is not UTF-8 text, so it cannot be returned as a `String`.
    case valueIsNotText
    /// The keyring cannot do this at all, whatever is retried; the text says why. `Keyring.lockCollection()`
    /// on the file backend, which has no locked state, throws it.
    case unsupported(String)

    /// A `SecretStore` without an account was asked to write or reset its item while items for
    /// several accounts (`username` values) match its identifier, so the change could hit another
    /// client's item for one of them. Nothing was changed. `accounts` lists the non-empty
    /// `username` values found, sorted. Pass `account:` to choose one.
    case ambiguousItem(accounts: [String])
    /// The file keyring (libsecret's file backend, used in sandboxes) does not open with the key it
    /// was given: the Secret portal's secret, or `SECRET_FILE_TEST_PASSWORD`, is not the one it was
    /// written with (or an item in it is damaged). Never reported as "absent".
    case wrongKey(path: String)
    /// The file keyring is not a readable libsecret keyring file (truncated, or not one at all).
    case keyringFileDamaged(path: String, detail: String)
    /// The file keyring cannot be read or written (permissions, a read-only or full disk), or no key
    /// for it is available (outside a sandbox with the Secret portal, without `SECRET_FILE_TEST_PASSWORD`).
    case keyringFileUnavailable(path: String, detail: String)
    /// The Secret Service cannot open an encrypted session: its Diffie-Hellman key exchange fails.
    /// KWallet does this when the QCA OpenSSL plugin is missing ("createDLGroup failed"): nothing
    /// can be read or written until that plugin is installed and the daemon restarted.
    /// `provider` is the daemon's process name (e.g. `kwalletd6`) when it could be found;
    /// `detail` is the service's own message.
    case keyExchangeFailed(provider: String?, detail: String)
    /// The item exists but the provider lost its value: it was written non-empty and reads back
    /// empty. KWallet's ksecretd saves a value up to 5 s after the write answered, and keeps the
    /// item's attributes at once, so a daemon stopped in between (a logout, a crash) leaves the
    /// item empty. Never reported as an empty value; write the value again.
    case valueLost(path: String)
    /// Any other failure reported by the service, with GLib's error domain, code and message.
    case serviceFailure(domain: String, code: Int32, message: String)
}

extension KeyringError: CustomStringConvertible {
    /// One line: what failed and what to do next.
    public var description: String {
        switch self {
        case .noSessionBus(let detail):
            return "no D-Bus session bus (\(detail)): run inside a desktop session, or start one with dbus-run-session"
        case .noSecretService:
            return
                "no Secret Service on the session bus: install and start gnome-keyring, KWallet or KeePassXC with its Secret Service enabled"
        case .locked(let itemExists, let unlock):
            let what = itemExists ? "the item exists but its keyring is locked" : "the keyring is locked"
            switch unlock {
            case .notAsked:
                return "\(what): unlock it by logging in to the desktop session (or with your keyring manager), then retry"
            case .dismissed:
                return
                    "\(what) and the unlock was dismissed (cancelled, or no unlock dialog could be shown): retry and enter the keyring password, or unlock it with your keyring manager"
            case .unanswered:
                return
                    "\(what) and nobody answered the unlock dialog in time: retry and enter the keyring password, or unlock it with your keyring manager"
            }
        case .noDefaultCollection:
            return "the Secret Service has no default keyring: create one (e.g. the login keyring in Seahorse), then retry"
        case .timedOut(let seconds):
            return
                "the Secret Service did not answer within \(Self.format(seconds)) s: check that the keyring daemon is responsive, or raise the timeout"
        case .cancelled:
            return "the keyring operation was cancelled"
        case .invalidArgument(let why):
            return "invalid argument: \(why)"
        case .valueIsNotText:
            return "the stored value is not UTF-8 text: read it as bytes with data(forKey:)"
        case .unsupported(let why):
            return "not supported: \(why)"
        case .ambiguousItem(let accounts):
            // Fewer than two names: the others matched have no account (an empty username).
            let quoted = accounts.map { "\"\($0)\"" } + (accounts.count < 2 ? ["one without an account"] : [])
            let names = " (" + quoted.joined(separator: ", ") + ")"
            return
                "items of several accounts\(names) match this identifier and no account was given, so it is not known which to change: "
                + "name the account (SecretStore(identifier:account:), idtool --account); nothing was changed"
        case .wrongKey(let path):
            return
                "the keyring file \(path) does not open with this key (the Secret portal's secret or SECRET_FILE_TEST_PASSWORD differs from the one it was written with, or the file is damaged): nothing was read or changed"
        case .keyringFileDamaged(let path, let detail):
            return "the keyring file \(path) is damaged (\(detail)): restore it from a backup, or move it away to start a new one"
        case .keyringFileUnavailable(let path, let detail):
            return "the keyring file \(path) is not usable: \(detail)"
        case .keyExchangeFailed(let provider, let detail):
            let who = provider.map { "the Secret Service (\($0))" } ?? "the Secret Service"
            return "\(who) cannot open an encrypted session, its key exchange fails (\(detail)): \(Self.keyExchangeFix(provider: provider))"
        case .valueLost(let path):
            return
                "the item \(path) exists but the Secret Service lost its value (written non-empty, it reads back empty: the daemon stopped before it saved it): write the value again"
        case .serviceFailure(let domain, let code, let message):
            return "the Secret Service failed (\(domain) \(code)): \(message)"
        }
    }

    /// What fixes `keyExchangeFailed` for this provider: KWallet's QCA OpenSSL plugin, named by the
    /// package of the daemon's Qt generation (kwalletd6 and ksecretd: Qt 6; kwalletd5: Qt 5).
    package static func keyExchangeFix(provider: String?) -> String {
        switch provider {
        case "kwalletd6", "ksecretd":
            return "KWallet needs the QCA OpenSSL plugin: install libqca-qt6-plugins (Debian, Ubuntu) "
                + "or your distribution's qca-qt6 ossl plugin, then restart \(provider!)"
        case "kwalletd5":
            return "KWallet needs the QCA OpenSSL plugin: install libqca-qt5-2-plugins (Debian, Ubuntu) "
                + "or your distribution's qca-qt5 ossl plugin, then restart kwalletd5"
        default:
            return "if the provider is KWallet, install the QCA OpenSSL plugin (libqca-qt6-plugins for kwalletd6, "
                + "libqca-qt5-2-plugins for kwalletd5) and restart it; otherwise check the provider's log"
        }
    }

    private static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }
}
